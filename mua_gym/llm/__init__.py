"""Talking to language models: the chat client every model call goes through (:mod:`.client`: limits, retries,
failure kinds, usage), the fast OpenAI-compatible client (:mod:`.openai_http`), the judge of natural-language
assertions (:mod:`.judge`), secret redaction (:mod:`.redact`) and the bundled local model (:mod:`.local_model`)."""
