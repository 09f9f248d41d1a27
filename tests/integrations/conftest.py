"""The trainer tests' fixtures live in tests/conftest.py (``smollm2_tokenizer`` is shared with tests/test_export.py)."""
