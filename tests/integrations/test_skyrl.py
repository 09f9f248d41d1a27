"""The SkyRL-gym adapter, driven through skyrl_gym's own registry and ``make`` (skyrl-gym 0.4)."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from typing import Any

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym")

from omegaconf import OmegaConf  # noqa: E402  (skyrl-gym's own dependency)
from skyrl_gym.metrics import aggregate_for_environment  # noqa: E402

from integrations.readme import readme_block  # noqa: E402
from mua_gym import get_domain  # noqa: E402
from mua_gym.eval.agents import OracleAgent  # noqa: E402
from mua_gym.integrations import MissingTrainerError, skyrl  # noqa: E402
from mua_gym.env.parsing import MAX_TOOL_CALLS  # noqa: E402

#: A small generated task set: the first make builds it in ~2 s instead of ~8 s for the default 2,000.
CONFIG = {"world_params": {"count": 20}}
TASK = "retail-train-0-00003"  # two requests, told straight: 7 gold calls, two of them writes
WRITES = {name for name, tool in get_domain("retail").tools.tools.items() if tool.kind == "write"}


def hermes(action: dict[str, Any]) -> str:
    """An OpenAI assistant message as the raw text a Hermes/Qwen model writes."""
    calls = action.get("tool_calls") or []
    objects = [{"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])} for c in calls]
    blocks = [f"<tool_call>{json.dumps(o)}</tool_call>" for o in objects]
    return "\n".join(blocks) if blocks else action["content"]


def make(task_id: str = TASK, config: Any = None, **extras: Any) -> Any:
    skyrl.register()
    return skyrl_gym.make("mua_retail", env_config=CONFIG if config is None else config,
                          extras={"task_id": task_id, "max_turns": 30, **extras})


def play(env: Any, drop_writes: bool = False) -> tuple[float, list[dict[str, Any]]]:
    """Plays the task's gold actions as raw Hermes text (without its writes if ``drop_writes``); (reward, outputs)."""
    observation, metadata = env.init([{"role": "user", "content": "replaced by the env's opening"}])
    agent = OracleAgent(env.env.core.task)
    outputs = []
    while True:
        action = agent.act(observation)
        names = [c["function"]["name"] for c in action.get("tool_calls") or []]
        if drop_writes and WRITES.intersection(names):
            action = {"role": "assistant", "content": "That is done for you."}  # claims a write it never made
        out = env.step(hermes(action))
        outputs.append(out)
        observation = out["observations"]
        if out["done"]:
            return out["reward"], outputs


def test_without_skyrl_gym_the_import_fails_in_one_line_naming_the_extra(monkeypatch):
    for name in ("skyrl_gym", "skyrl_gym.envs", "skyrl_gym.envs.base_text_env"):
        monkeypatch.setitem(sys.modules, name, None)  # None in sys.modules: "not installed"
    monkeypatch.delitem(sys.modules, "mua_gym.integrations.skyrl")
    with pytest.raises(MissingTrainerError, match=r'pip install "mua_gym\[skyrl\]"') as raised:
        importlib.import_module("mua_gym.integrations.skyrl")
    assert "\n" not in str(raised.value)


def test_register_is_idempotent_and_names_every_domain():
    assert set(skyrl.register()) >= {"mua_retail", "mua_airline", "mua_telecom", "mua_mock"}
    assert skyrl.register() == skyrl.register()
    assert skyrl_gym.spec("mua_airline").kwargs == {"domain": "airline"}


def test_gold_play_in_hermes_text_scores_one():
    env = make()
    try:
        reward, outputs = play(env)
        assert reward == 1.0
        assert [o["reward"] for o in outputs[:-1]] == [0.0] * (len(outputs) - 1)  # only the last step pays
        assert outputs[0]["observations"][0]["role"] == "tool"
        assert outputs[-1]["metadata"]["termination_reason"] == "user_stop"
        assert outputs[-1]["observations"] == []  # nothing is fed to the model after the end
        metrics = env.get_metrics()
        gold = [a for a in env.env.core.task.gold_actions if a.requestor == "assistant"]
        assert metrics["reward"] == 1.0 and metrics["tool_calls"] == len(gold) and metrics["tool_errors"] == 0
        assert len(gold) == 7 and len(WRITES.intersection(a.name for a in gold)) == 2
        assert aggregate_for_environment("mua_retail", [metrics, {**metrics, "reward": 0.0}])["reward"] == 0.5
    finally:
        env.close()


def test_wrong_play_scores_zero():
    env = make()
    try:
        reward, outputs = play(env, drop_writes=True)
        assert reward == 0.0 and outputs[-1]["done"]
        assert outputs[-1]["metadata"]["reward_info"]["components"]["DB"] == 0.0
    finally:
        env.close()


def test_init_returns_the_envs_opening_with_the_tools_in_the_system_message():
    env = make(config=OmegaConf.create(CONFIG))  # SkyRL hands a DictConfig
    messages, metadata = env.init([{"role": "user", "content": "ignored"}])
    env.close()
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"] != "ignored" and metadata["task_id"] == TASK
    names = [t["function"]["name"] for t in metadata["tools"]]
    assert "<tool_call>" in messages[0]["content"] and all(f'"name": "{n}"' in messages[0]["content"] for n in names)
    plain = make(config={**CONFIG, "tools_in_prompt": False})
    bare, _ = plain.init([])
    plain.close()
    assert "<tools>" not in bare[0]["content"] and bare[0]["content"] in messages[0]["content"]


def test_task_choice_and_turn_cap_come_from_extras():
    skyrl.register()
    drawn = [skyrl_gym.make("mua_retail", env_config=CONFIG, extras={"seed": 7}) for _ in range(2)]
    ids = [env.init([])[1]["task_id"] for env in drawn]
    assert ids[0] == ids[1] and ids[0].startswith("retail-train-")  # a seed draws the same task every time
    nested = skyrl_gym.make("mua_retail", env_config=CONFIG, extras={"extra_info": {"task_id": TASK}})
    assert nested.init([])[1]["task_id"] == TASK
    with pytest.raises(ValueError, match="task_id"):
        skyrl_gym.make("mua_retail", env_config=CONFIG, extras={})
    capped = make(max_turns=2)
    capped.init([])
    look = '<tool_call>{"name": "list_all_product_types", "arguments": {}}</tool_call>'  # never reaches the user
    assert not capped.step(look)["done"]
    last = capped.step(look)
    assert last["done"] and last["reward"] == 0.0 and last["metadata"]["termination_reason"] == "max_turns"
    for env in (*drawn, nested, capped):
        env.close()


def test_env_config_interpolations_resolve_through_the_shared_plain_config(monkeypatch):
    from mua_gym.integrations import plain_config

    monkeypatch.setenv("MUA_TEST_TURNS", "2")
    config = OmegaConf.create({**CONFIG, "max_turns": "${oc.env:MUA_TEST_TURNS}"})  # what hydra hands over
    assert plain_config(config) == {**CONFIG, "max_turns": "2"} and plain_config(None) == {}
    given = {"a": [1]}
    assert plain_config(given) == given and plain_config(given) is not given
    capped = skyrl.MuaTextEnv(config, {"task_id": TASK}, domain="retail")
    try:
        assert capped.max_turns == 2
    finally:
        capped.close()


def test_steps_on_a_running_event_loop_with_a_user_that_awaits():
    from mua_gym.user_sims.scripted import ScriptedUser

    class AwaitingUser(ScriptedUser):  # stands for an LLM user: its turn suspends
        immediate = False

        async def respond(self, view: Any) -> Any:
            await asyncio.sleep(0)
            return await super().respond(view)

    async def rollout() -> float:  # SkyRL with max_env_workers=0 calls init/step on its own loop
        env = make(config={**CONFIG, "user": AwaitingUser()})
        try:
            return play(env)[0]
        finally:
            env.close()

    assert asyncio.run(rollout()) == 1.0


MALFORMED = [
    "",
    "<tool_call>{not json</tool_call>",
    '<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>',
    '<tool_call>{"name": "get_order_details", "arguments": {"order_id": 12}}</tool_call>',
    '<tool_call>{"name": "get_order_details"',
    "<tool_call>" + "[" * 100_000,
    '{"name": "get_order_details", "arguments": "#W1"}',
    '<tool_call>{"name": "calculate", "arguments": {"expression": NaN}}</tool_call>',
    "\ud800 lone surrogate <tool_call>\udfff</tool_call>",
    '<tool_call>{"name": "list_all_product_types", "arguments": {}}</tool_call>' * (MAX_TOOL_CALLS + 1),
]


@pytest.mark.parametrize("text", MALFORMED, ids=range(len(MALFORMED)))
def test_malformed_text_never_raises_and_comes_back_as_an_error(text):
    env = make(config={**CONFIG, "max_tool_errors": 50})
    env.init([])
    before = env.env.world.state_hash()
    out = env.step(text)
    after = env.env.world.state_hash()
    env.close()
    assert out["reward"] == 0.0 and not out["done"] and before == after
    assert out["observations"], "the model must be told something"
    if text:  # an empty message goes to the customer, who answers it
        assert any(o["role"] == "tool" and o["content"].startswith("Error") for o in out["observations"])


@pytest.mark.slow  # datasets and pyarrow load for the parquet file
def test_readme_block_runs_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # it writes the dataset next to itself
    exec(compile(readme_block("Train with SkyRL"), "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "Error" in printed and "0.0 False" in printed
    assert (tmp_path / "mua_retail_train.parquet").stat().st_size > 0


@pytest.mark.slow  # loads a real tokenizer (~8 s, shared with the other trainer tests)
def test_opening_and_observations_render_with_a_tool_aware_chat_template(smollm2_tokenizer):
    env = make()
    messages, _ = env.init([])
    call = '<tool_call>{"name": "find_user_id_by_email", "arguments": {"email": "nobody@example.com"}}</tool_call>'
    out = env.step(call)
    env.close()
    # what SkyRL tokenizes: the opening, then the model's text, then the observations as chat turns
    text = smollm2_tokenizer.apply_chat_template([*messages, {"role": "assistant", "content": call},
                                                  *out["observations"]], tokenize=False, add_generation_prompt=True)
    assert text.count("<tools>") == 1 and '"name": "find_user_id_by_email"' in text
    assert "<tool_response>\n" + out["observations"][0]["content"] in text


@pytest.mark.parametrize(("how", "at"), [("fault", 1), ("error", 1), ("fault", 0), ("error", 0)])
def test_a_void_episode_says_so_in_its_metadata_and_metrics(how, at):
    # the gold play, whose user breaks at its first reply (at=1) or its opening (at=0); skyrl-gym has no way to
    # drop a trajectory, so the void is what the step's metadata and the env's metrics carry
    from integrations.void_users import Breaks

    env = make(config={**CONFIG, "user": Breaks(how, at), "on_user_fault": "void"})
    try:
        kind = "user_fault: invented_fact" if how == "fault" else "user_error: RuntimeError"
        _, metadata = env.init([])
        assert ("void" in metadata) == (at == 0)
        reward, outputs = play(env)
        last = outputs[-1]
        assert last["done"] and reward == 0.0 and last["metadata"]["void"].startswith(kind)
        assert all("void" not in o["metadata"] for o in outputs[:-1])
        assert (len(outputs) > 1) == (at == 1)  # midway: after the model's first turns
        metrics = env.get_metrics()
        assert metrics["void"] == 1.0
        assert aggregate_for_environment("mua_retail", [metrics, {**metrics, "void": 0.0}])["void"] == 0.5
    finally:
        env.close()
