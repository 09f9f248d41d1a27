"""ChatTokens: ids that only grow, and a mask on exactly the model's tokens, for three chat-template families."""

from __future__ import annotations

import json

import pytest

from mua_gym.integrations.chat_tokens import ChatTokens, template_message, tokenize_chat

chat_templates = pytest.importorskip("trl.chat_template_utils")

LLAMA_SPECIALS = ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>",
                  "<|python_tag|>"]
TOOLS = [{"type": "function", "function": {
    "name": "get_order_details", "description": "Look an order up.",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string", "description": "The id."}},
                   "required": ["order_id"]}}}]


def call(call_id: str, name: str, arguments: dict) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


# One call per turn: Llama 3.1's template refuses parallel calls.
CONVERSATION = [
    {"role": "system", "content": "You are a store's support agent."},
    {"role": "user", "content": "Hi, please cancel my order #W1."},
    {"role": "assistant", "content": None, "tool_calls": [call("c1", "get_order_details", {"order_id": "#W1"})]},
    {"role": "tool", "tool_call_id": "c1", "content": '{"status": "pending"}'},
    {"role": "assistant", "content": "It is pending. Shall I cancel it?"},
    {"role": "user", "content": "Yes please."},
    {"role": "assistant", "content": None, "tool_calls": [call("c2", "get_order_details", {"order_id": "#W1"})]},
    {"role": "tool", "tool_call_id": "c2", "content": '{"status": "cancelled"}'},
    {"role": "assistant", "content": "Done: #W1 is cancelled."},
]


@pytest.fixture(scope="module")
def tokenizers(smollm2_tokenizer, tmp_path_factory):
    """name -> a copy of the SmolLM2 tokenizer under that family's template (Llama's header tokens added)."""
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("tokenizer")
    smollm2_tokenizer.save_pretrained(folder)
    out = {}
    for name, template, specials in [("qwen2.5", chat_templates.qwen2_5_chat_template, []),
                                     ("llama3.1", chat_templates.llama3_1_chat_template, LLAMA_SPECIALS),
                                     ("qwen3", chat_templates.qwen3_chat_template, [])]:
        tokenizer = AutoTokenizer.from_pretrained(folder)
        tokenizer.chat_template = template
        if specials:
            tokenizer.add_special_tokens({"additional_special_tokens": specials})
        out[name] = tokenizer
    return out


def grow(tokenizer, messages=CONVERSATION) -> tuple[ChatTokens, list[list[int]]]:
    """Builds the conversation turn by turn; also returns the ids after every turn."""
    tokens = ChatTokens(tokenizer, messages[:2], TOOLS)
    history = [list(tokens.ids)]
    i = 2
    while i < len(messages):
        if messages[i]["role"] == "assistant":
            tokens.add_assistant(messages[i])
            i += 1
        else:
            j = i
            while j < len(messages) and messages[j]["role"] != "assistant":
                j += 1
            tokens.add_messages(messages[i:j])
            i = j
        history.append(list(tokens.ids))
    return tokens, history


def spans(tokenizer, tokens: ChatTokens) -> list[str]:
    """The decoded runs of masked (model) tokens, in order."""
    out, run = [], []
    for token, flag in zip(tokens.ids, tokens.mask):
        if flag:
            run.append(token)
        elif run:
            out.append(tokenizer.decode(run, clean_up_tokenization_spaces=False))
            run = []
    if run:
        out.append(tokenizer.decode(run, clean_up_tokenization_spaces=False))
    return out


def full_render(tokenizer, messages=CONVERSATION) -> str:
    return tokenizer.apply_chat_template([template_message(m) for m in messages], tools=TOOLS, tokenize=False)


@pytest.mark.parametrize("family", ["qwen2.5", "llama3.1", "qwen3"])
def test_each_turn_extends_the_ids_before_it(tokenizers, family):
    tokens, history = grow(tokenizers[family])
    assert len(tokens.ids) == len(tokens.mask)
    for shorter, longer in zip(history, history[1:]):
        assert len(longer) > len(shorter) and longer[:len(shorter)] == shorter
    assert tokens.prompt_ids == history[0] and tokens.response_ids == tokens.ids[len(history[0]):]


@pytest.mark.parametrize("family", ["qwen2.5", "llama3.1"])
def test_the_ids_spell_the_templates_own_render(tokenizers, family):
    """For templates that render earlier turns the same whatever follows, the grown ids decode to the whole
    conversation's render, character for character."""
    tokenizer = tokenizers[family]
    tokens, _ = grow(tokenizer)
    assert tokenizer.decode(tokens.ids, clean_up_tokenization_spaces=False) == full_render(tokenizer)


def test_qwen_ids_are_the_tokenization_of_the_render(tokenizers):
    tokenizer = tokenizers["qwen2.5"]
    tokens, _ = grow(tokenizer)
    assert tokens.ids == tokenizer.encode(full_render(tokenizer), add_special_tokens=False)


def test_the_mask_covers_exactly_the_model_turns(tokenizers):
    calls = ['<tool_call>\n{"name": "get_order_details", "arguments": {"order_id": "#W1"}}\n</tool_call>']
    expected = {
        "qwen2.5": [calls[0] + "<|im_end|>", "It is pending. Shall I cancel it?<|im_end|>", calls[0] + "<|im_end|>",
                    "Done: #W1 is cancelled.<|im_end|>"],
        "llama3.1": ['{"name": "get_order_details", "parameters": {"order_id": "#W1"}}<|eot_id|>',
                     "It is pending. Shall I cancel it?<|eot_id|>",
                     '{"name": "get_order_details", "parameters": {"order_id": "#W1"}}<|eot_id|>',
                     "Done: #W1 is cancelled.<|eot_id|>"],
    }
    # Qwen 3 writes an (empty) reasoning block at the head of every model turn: it is the model's too.
    think = "<think>\n\n</think>\n\n"
    expected["qwen3"] = [think + s for s in expected["qwen2.5"]]
    for family, turns in expected.items():
        tokens, _ = grow(tokenizers[family])
        assert spans(tokenizers[family], tokens) == turns, family
        assert sum(tokens.mask) == sum(len(tokenizers[family].encode(t, add_special_tokens=False)) for t in turns)


def test_generated_ids_keep_their_tokens_and_get_the_templates_glue(tokenizers):
    """What a model generated is kept verbatim, even where re-tokenizing its text would give other ids."""
    tokenizer = tokenizers["qwen2.5"]
    tokens = ChatTokens(tokenizer, CONVERSATION[:2], TOOLS)
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    odd = tokenizer.encode("It", add_special_tokens=False) + tokenizer.encode(" is", add_special_tokens=False)
    tokens.add_model_tokens([*odd, end])
    assert tokens.response_ids[:len(odd) + 1] == [*odd, end] and tokens.response_mask[:len(odd) + 1] == [1] * 3
    glue = tokens.response_ids[len(odd) + 1:]
    assert tokenizer.decode(glue) == "\n" and tokens.response_mask[len(odd) + 1:] == [0] * len(glue)
    tokens.add_messages([{"role": "user", "content": "Thanks"}])
    assert tokenizer.decode(tokens.ids, clean_up_tokenization_spaces=False).endswith(
        "It is<|im_end|>\n<|im_start|>user\nThanks<|im_end|>\n<|im_start|>assistant\n")
    cut_short = ChatTokens(tokenizer, CONVERSATION[:2], TOOLS)
    cut_short.add_model_tokens(odd)  # no end-of-turn token (the length budget ran out): the turn is closed for it
    assert cut_short.response_ids == [*odd, end, *glue] and cut_short.response_mask == [1, 1, 0] + [0] * len(glue)
    cut_short.add_messages([{"role": "user", "content": "Thanks"}])
    assert tokenizer.decode(cut_short.ids, clean_up_tokenization_spaces=False).endswith(
        "It is<|im_end|>\n<|im_start|>user\nThanks<|im_end|>\n<|im_start|>assistant\n")


def test_a_template_that_rewrites_history_is_refused(tokenizers):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizers["qwen2.5"].name_or_path)
    # numbers every message by how many follow it: no earlier render is a prefix of a later one
    tokenizer.chat_template = ("{% for m in messages %}[{{ messages|length - loop.index }}]{{ m.role }}: "
                               "{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}")
    with pytest.raises(ValueError, match="turn by turn"):
        ChatTokens(tokenizer, CONVERSATION[:2])
    with pytest.raises(ValueError, match="no chat template"):
        tokenizer.chat_template = None
        ChatTokens(tokenizer, CONVERSATION[:2])


def test_a_recorded_episode_tokenizes_with_its_trainable_turns_masked(tokenizers):
    import mua_gym
    from mua_gym.eval.agents import OracleAgent

    env = mua_gym.make("mua/Mock-v0")
    obs, info = env.reset(options={"task_id": "mock-cancel-card"})
    agent = OracleAgent(env.unwrapped.core.task)
    agent.reset(info)
    terminated = truncated = False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step(agent.act(obs))
    assert reward == 1.0
    chat = env.unwrapped.trajectory().to_chat()
    tokenizer = tokenizers["qwen2.5"]
    tokens = tokenize_chat(tokenizer, chat)
    model_turns = [m for m, t in zip(chat.messages, chat.trainable) if t]
    assert len(spans(tokenizer, tokens)) == len(model_turns) >= 3
    text = tokenizer.decode(tokens.ids, clean_up_tokenization_spaces=False)
    for message in chat.messages:
        assert (message.get("content") or "")[:40] in text
