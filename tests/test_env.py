import asyncio
import json

import gymnasium
import numpy as np
import pytest
from episodes import run_oracle
from gymnasium.utils.env_checker import check_env
from mua_gym.user_sims import UserReply, UserSimulator, UserSimulatorError

import mua_gym
from mua_gym import AsyncMuaEnv, MuaEnv, Trajectory
from mua_gym.eval.agents import OracleAgent, RandomAgent
from mua_gym.world.diff import WorldDiff, compare_changes
from mua_gym.env.episode import prepare_task


def test_check_env_passes():
    env = gymnasium.make("mua/Mock-v0")
    check_env(env.unwrapped, skip_render_check=False)
    env.close()


def test_registered_ids():
    spec = gymnasium.spec("mua/Mock-v0")
    assert spec.nondeterministic is True
    env = mua_gym.make("mua/Mock-v0", max_turns=7)
    assert isinstance(env.unwrapped, MuaEnv)
    assert env.unwrapped.core.max_turns == 7


def test_reset_returns_policy_and_opening():
    env = MuaEnv("mock")
    obs, info = env.reset(seed=5)
    assert [m["role"] for m in obs] == ["system", "user"]
    assert obs[0]["content"] == info["policy"]
    assert info["domain"] == "mock" and info["task_id"].startswith("mock-")
    assert {t["function"]["name"] for t in info["tools"]} >= {"cancel_order", "get_order"}
    json.dumps(info)


def test_seeded_resets_are_identical():
    a, b = MuaEnv("mock"), MuaEnv("mock")
    for seed in range(10):
        assert a.reset(seed=seed) == b.reset(seed=seed)
    # Unseeded resets continue the seeded stream deterministically.
    a.reset(seed=3)
    b.reset(seed=3)
    assert [a.reset()[1]["task_id"] for _ in range(5)] == [b.reset()[1]["task_id"] for _ in range(5)]


def test_gold_replay_scores_one_on_every_task(mock, all_mock_tasks):
    assert len(all_mock_tasks) >= 12
    for task in all_mock_tasks:
        assert not [r.content for r in prepare_task(mock, task).gold_results if r.error], task.id
    env = MuaEnv("mock")
    for task in all_mock_tasks:
        reward, terminated, truncated, info = run_oracle(env, task)
        assert (reward, terminated, truncated) == (1.0, True, False), (task.id, info)
        assert info["reward_info"]["db_diff"] == {"tables": {}}
        assert info["reward_info"]["partial_credit"] == 1.0
        # A gold final world takes the reward's short cut; the full comparison must agree with it.
        p = prepare_task(mock, task)
        full = compare_changes(p.image, p.start_changes, p.gold_changes, env.world.changes())
        n = info["reward_info"]["gold_rows_changed"]
        assert full == (WorldDiff(), n, n, 0, 0) and info["reward_info"]["rows_reproduced"] == n


def test_doing_nothing_scores_zero_where_gold_changes_state(mock, all_mock_tasks):
    env = MuaEnv("mock")
    changing = 0
    for task in all_mock_tasks:
        env.reset(options={"task": task})
        while True:
            _, reward, terminated, truncated, info = env.step("I'm sorry, I can't help with that.")
            if terminated or truncated:
                break
        gold_changes = info["reward_info"]["gold_rows_changed"]
        needs_words = bool(task.evaluation.communicate_info)
        if gold_changes or needs_words or "ACTION" in task.evaluation.reward_basis:
            changing += 1
            assert reward == 0.0, task.id
        else:
            assert reward == 1.0, task.id  # refusals: doing nothing is right
    assert changing >= 9


def test_random_strings_never_raise_and_never_change_the_world():
    env = MuaEnv("mock", max_turns=10_000)
    env.reset(seed=0)
    start = env.world.state_hash()
    rng = np.random.default_rng(0)
    alphabet = list("abc {}[]<>\"':,/\\_-tool_call></think>") + ["<tool_call>", "</tool_call>", "{\"name\":"]
    for i in range(1000):
        text = "".join(rng.choice(alphabet, size=int(rng.integers(0, 40))))
        obs, reward, terminated, truncated, info = env.step(text)
        assert isinstance(obs, list)
        if terminated or truncated:
            env.reset(seed=i)
    assert env.world.state_hash() == start


@pytest.mark.parametrize("action,needle", [
    ({"name": "drop_everything", "arguments": {}}, "unknown tool 'drop_everything'"),
    ({"name": "cancel_order", "arguments": {"order_id": 1001, "reason": "no longer needed"}}, "argument 'order_id'"),
    ({"name": "cancel_order", "arguments": {"order_id": "O1001"}}, "missing argument 'reason'"),
    ({"role": "assistant", "tool_calls": [{"id": "x", "type": "function",
      "function": {"name": "cancel_order", "arguments": "{not json"}}]}, "malformed JSON arguments"),
    ({"role": "assistant", "tool_calls": [{"id": "x", "type": "function",
      "function": {"name": "cancel_order", "arguments": "[1, 2]"}}]}, "must be a JSON object"),
    ("<tool_call>{\"name\": \"cancel_order\", \"arguments\": </tool_call>", "malformed tool call"),
    ({"name": "toggle_notifications", "arguments": {}}, "not available to the assistant"),
    ({"name": "cancel_order", "arguments": {"order_id": "O1006", "reason": "no longer needed"}},
     "only pending orders"),
])
def test_bad_calls_become_error_messages_and_change_nothing(action, needle):
    env = MuaEnv("mock")
    env.reset(options={"task_id": "mock-cancel-card"})
    start = env.world.state_hash()
    obs, reward, terminated, truncated, info = env.step(action)
    assert len(obs) == 1 and obs[0]["role"] == "tool"
    assert obs[0]["content"].startswith("Error:") and needle in obs[0]["content"]
    assert info["tool_errors"] == 1 and not terminated and not truncated
    assert env.world.state_hash() == start


@pytest.mark.parametrize("action", [None, 42, 3.5, {"role": "user", "content": "hi"}, [], object(),
                                    {"role": "assistant", "content": 7}, [1, 2]])
def test_unreadable_actions_never_raise(action):
    env = MuaEnv("mock")
    env.reset(seed=0)
    start = env.world.state_hash()
    obs, reward, terminated, truncated, info = env.step(action)
    assert obs == [] and "unreadable action" in info["error"]
    assert env.world.state_hash() == start


def test_tool_calls_run_in_order_and_text_goes_to_the_user():
    env = MuaEnv("mock", user="scripted")  # its next line, whatever is asked
    env.reset(options={"task_id": "mock-cancel-card"})
    obs, *_ = env.step({"role": "assistant", "content": "Let me check.", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "get_order", "arguments": '{"order_id": "O1001"}'}},
        {"id": "b", "type": "function", "function": {"name": "find_customer_by_email",
                                                      "arguments": '{"email": "ana@example.com"}'}}]})
    assert [(m["role"], m["tool_call_id"]) for m in obs] == [("tool", "a"), ("tool", "b")]
    assert json.loads(obs[0]["content"])["status"] == "pending" and obs[1]["content"] == "C001"
    obs, *_ = env.step("<think>the user is Ana</think>Shall I cancel it?")
    assert obs == [{"role": "user", "content": "Yes, that's right. Please go ahead."}]
    traj = env.trajectory()
    said = traj.entries[-2].message
    assert said.content == "Shall I cancel it?" and said.reasoning == "the user is Ana"


def test_hermes_and_json_strings_are_tool_calls():
    env = MuaEnv("mock")
    env.reset(options={"task_id": "mock-cancel-card"})
    obs, *_ = env.step('<think>hm</think><tool_call>{"name": "get_order", "arguments": {"order_id": "O1001"}}'
                       '</tool_call><tool_call>{"name": "list_products", "arguments": {}}</tool_call>')
    assert [m["role"] for m in obs] == ["tool", "tool"] and not obs[0]["content"].startswith("Error")
    obs, *_ = env.step('{"name": "get_order", "arguments": {"order_id": "O1002"}}')
    assert json.loads(obs[0]["content"])["order_id"] == "O1002"


def test_truncation_on_max_turns_and_tool_errors():
    env = MuaEnv("mock", max_turns=3)
    env.reset(seed=0)
    results = [env.step({"name": "list_products", "arguments": {}}) for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True]
    assert results[-1][4]["termination_reason"] == "max_turns" and results[-1][1] == 0.0
    obs, reward, terminated, truncated, info = env.step("hello?")
    assert obs == [] and truncated and "call reset" in info["error"]

    env = MuaEnv("mock", max_tool_errors=2)
    env.reset(seed=0)
    env.step({"name": "nope", "arguments": {}})
    *_, truncated, info = env.step({"name": "nope", "arguments": {}})
    assert truncated and info["termination_reason"] == "too_many_tool_errors"


def test_terminal_tool_ends_the_episode_with_its_reward():
    env = MuaEnv("mock")
    transfer = {"name": "transfer_to_human_agents", "arguments": {"summary": "wants a bank refund"}}
    for said, paid in ((None, 0.0), ("You paid for O1004 by gift_card, so the refund goes there.", 1.0)):
        env.reset(options={"task_id": "mock-transfer-bank-refund"})
        for call in ({"name": "find_customer_by_email", "arguments": {"email": "ben@example.com"}},
                     {"name": "get_order", "arguments": {"order_id": "O1004"}}):
            env.step(call)
        if said is not None:
            env.step(said)
        obs, reward, terminated, truncated, info = env.step(transfer)
        assert terminated and not truncated and info["termination_reason"] == "agent_stop"
        assert obs[0]["content"] == "Transfer successful"
        assert reward == paid  # DB unchanged, ACTION matched on the name; the hand-off's reason told, or not


class FailingUser(UserSimulator):
    name = "failing"

    def __init__(self, fail_on_start=False):
        self.fail_on_start = fail_on_start

    async def start(self, task, *, seed=None, tools=None):
        if self.fail_on_start:
            raise UserSimulatorError("the model is down")
        return UserReply(content="hi")

    async def respond(self, view):
        raise TimeoutError("no answer")


def test_user_failures_truncate_instead_of_raising():
    env = MuaEnv("mock", user=FailingUser())
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("Hello, how can I help?")
    assert (obs, reward, terminated, truncated) == ([], 0.0, False, True)
    assert info["termination_reason"] == "user_error" and "no answer" in info["user_error"]

    env = MuaEnv("mock", user=FailingUser(fail_on_start=True))
    obs, info = env.reset(seed=0)
    assert [m["role"] for m in obs] == ["system"] and "model is down" in info["user_error"]
    obs, reward, terminated, truncated, info = env.step("Hello?")
    assert truncated and info["termination_reason"] == "user_error"


class PhoneUser(UserSimulator):
    """Turns notifications on with its own tool, then stops; checks what it was shown."""

    name = "phone"

    async def start(self, task, *, seed=None, tools=None):
        self.tools = tools
        self.views = []
        return UserReply(content="My notifications are off.")

    async def respond(self, view):
        self.views.append(list(view))
        if not any(getattr(m, "role", "") == "tool" for m in view):
            from mua_gym import ToolCall
            return UserReply(tool_calls=[ToolCall.make("u1", "toggle_notifications", {})])
        return UserReply(content="Done, they are on now. ###STOP###")


def test_dual_control_user_tools_are_hidden_from_the_agent(mock):
    from mua_gym import EnvAssertion, EvaluationSpec, Task

    task = Task(id="phone", domain="mock", script=["x"],
                evaluation=EvaluationSpec(reward_basis=["ENV_ASSERTION"],
                                          env_assertions=[EnvAssertion(name="notifications_on")]))
    user = PhoneUser()
    env = MuaEnv("mock", user=user)
    env.reset(options={"task": task})
    assert [t["function"]["name"] for t in user.tools] == ["toggle_notifications"]
    env.step({"name": "get_order", "arguments": {"order_id": "O1001"}})
    obs, reward, terminated, truncated, info = env.step("Please turn on notifications in the app.")
    assert obs == [{"role": "user", "content": "Done, they are on now. ###STOP###"}]
    assert terminated and reward == 1.0
    # The user saw the agent's text but not its tool call or result.
    first_view = user.views[0]
    assert [m.role for m in first_view] == ["user", "assistant"]
    assert first_view[1].content == "Please turn on notifications in the app." and not first_view[1].tool_calls
    traj = env.trajectory()
    hidden = [e for e in traj.entries if not e.visible_to_agent]
    assert [e.message.role for e in hidden] == ["user", "tool"]
    assert all(m["role"] != "tool" or m["tool_call_id"] != "u1" for m in env.agent_messages())
    assert traj.user_tool_calls == 1


def test_trajectory_json_round_trip(all_mock_tasks):
    env = MuaEnv("mock")
    run_oracle(env, all_mock_tasks[0])
    traj = env.trajectory()
    line = traj.to_json_line()
    assert "\n" not in line
    again = Trajectory.from_json_line(line)
    assert again == traj
    assert [e.trainable for e in traj.entries] == [e.message.role == "assistant" for e in traj.entries]
    assert traj.reward == 1.0 and traj.termination_reason == "user_stop"
    assert traj.tool_calls == len(all_mock_tasks[0].gold_actions)
    assert "<div" in traj._repr_html_() and "<div" in env._repr_html_()


def test_partial_credit_reward_option(mock):
    env = MuaEnv("mock", reward="partial")
    env.reset(options={"task_id": "mock-multi-intent"})
    env.step({"name": "update_email", "arguments": {"customer_id": "C001", "email": "ana.lopez@example.net"}})
    env.step({"name": "cancel_order", "arguments": {"order_id": "O1001", "reason": "no longer needed"}})  # wrong
    while True:
        _, reward, terminated, truncated, info = env.step("Done!")
        if terminated or truncated:
            break
    ri = info["reward_info"]
    assert ri["reward"] == 0.0
    # gold: customer email, order O1002, 2 product stocks = 4 rows; reproduced 1; extra: O1001 + P01 stock...
    assert ri["gold_rows_changed"] == 4 and ri["rows_reproduced"] == 1
    assert ri["extra_rows_changed"] == 1  # order O1001 (P01's stock is a gold row too, with another value)
    assert reward == pytest.approx(0.0)
    missing = ri["db_diff"]["tables"]["orders"]["updated"]
    assert {r["key"]["order_id"] for r in missing} == {"O1001", "O1002"}


def test_render_ansi():
    env = gymnasium.make("mua/Mock-v0", render_mode="ansi")
    env.reset(seed=1)
    env.step("Hello! Could you give me your email?")
    text = env.render()
    assert "[user]" in text and "[agent] Hello!" in text


def test_sync_facade_inside_a_running_event_loop():
    async def notebook_cell():
        env = MuaEnv("mock")
        obs, info = env.reset(seed=0)
        obs, *_ = env.step({"name": "list_products", "arguments": {}})
        env.close()
        return obs

    obs = asyncio.run(notebook_cell())
    assert obs[0]["role"] == "tool"


def test_async_env_many_episodes_on_one_loop(all_mock_tasks):
    async def episode(task):
        env = AsyncMuaEnv("mock")
        obs, info = await env.reset(options={"task": task})
        agent = OracleAgent(task)
        while True:
            obs, reward, terminated, truncated, info = await env.step(await agent.aact(obs))
            if terminated or truncated:
                await env.aclose()
                return reward

    async def main():
        return await asyncio.gather(*(episode(t) for t in all_mock_tasks * 4))

    assert asyncio.run(main()) == [1.0] * (4 * len(all_mock_tasks))


@pytest.mark.parametrize("mode,kwargs", [("sync", {}), ("async", {"shared_memory": False})])
def test_vector_envs_step(mode, kwargs):
    envs = gymnasium.make_vec("mua/Mock-v0", num_envs=2, vectorization_mode=mode, vector_kwargs=kwargs)
    obs, infos = envs.reset(seed=[1, 2])
    assert len(obs) == 2 and all(o[0]["role"] == "system" for o in obs)
    obs, rewards, terminated, truncated, infos = envs.step(["Hi, may I have your email?", "Hello!"])
    assert all(o[0]["role"] == "user" for o in obs)
    assert list(rewards) == [0.0, 0.0] and not terminated.any()
    envs.close()


def test_random_agent_plays_safely():
    env = MuaEnv("mock", max_turns=15)
    agent = RandomAgent(seed=0)
    for seed in range(10):
        obs, info = env.reset(seed=seed)
        agent.reset(info)
        while True:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs))
            if terminated or truncated:
                assert 0.0 <= reward <= 1.0
                break


def test_nl_assertions_use_the_pluggable_judge():
    from mua_gym import EvaluationSpec, Task

    task = Task(id="nl", domain="mock", script=["Hi, what do you sell?"],
                evaluation=EvaluationSpec(reward_basis=["DB", "NL_ASSERTION"],
                                          nl_assertions=["The agent greets the customer."]))
    seen = {}

    async def judge(messages, assertions):
        seen["messages"], seen["assertions"] = messages, assertions
        return ["hello" in (m.get("content") or "").lower() for m in messages if m["role"] == "assistant"][:1]

    for text, expected in [("Hello! We sell coffee gear.", 1.0), ("We sell coffee gear.", 0.0)]:
        env = MuaEnv("mock", judge=judge, user="scripted")
        env.reset(options={"task": task})
        _, reward, terminated, truncated, info = env.step(text)  # the one-line script stops here
        assert terminated and reward == expected
        assert info["reward_info"]["components"]["NL_ASSERTION"] == expected
    assert seen["assertions"] == ["The agent greets the customer."]
    assert all(m["role"] != "tool" for m in seen["messages"])

    # Without a judge, tau2's rules skip the component (None). This task's world is its gold one untouched, so
    # only the judge can tell a solution from an idle agent: strictly, it is failed until judged.
    env = MuaEnv("mock", user="scripted")
    env.reset(options={"task": task})
    _, reward, terminated, truncated, info = env.step("We sell coffee gear.")
    assert reward == 0.0 and info["reward_info"]["components"]["NL_ASSERTION"] == 0.0
    assert info["reward_info"]["parity_reward"] == 1.0

    async def broken(messages, assertions):
        raise ConnectionError("judge offline")

    env = MuaEnv("mock", judge=broken, user="scripted")
    env.reset(options={"task": task})
    _, reward, terminated, truncated, info = env.step("Hello!")
    assert reward == 0.0 and "judge offline" in info["reward_info"]["judge_error"]


def test_info_is_json_serialisable_at_every_step(all_mock_tasks):
    env = MuaEnv("mock")
    for task in all_mock_tasks[:4]:
        obs, info = env.reset(options={"task": task})
        json.dumps(info)
        agent = OracleAgent(task)
        while True:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs))
            json.dumps(info)
            json.dumps(obs)
            if terminated or truncated:
                break


def test_same_seed_same_episodes_bit_for_bit(tmp_path):
    from mua_gym.cli import main

    runs = []
    for i in range(2):
        out = tmp_path / f"run{i}.jsonl"
        main(["run", "--agent", "random", "--episodes", "5", "--seed", "7", "--quiet", "--jsonl", str(out)])
        runs.append(out.read_bytes())
    assert runs[0] == runs[1] and len(runs[0]) > 1000


def test_finish_scores_the_world_as_it_stands_like_a_terminal_step():
    from mua_gym.eval.agents import OracleAgent

    env = mua_gym.make("mua/Mock-v0").unwrapped
    assert env.finish() == 0.0  # no episode yet
    obs, info = env.reset(options={"task_id": "mock-cancel-card"})
    agent = OracleAgent(env.core.task)
    while True:  # every gold call, then stop before the user has said goodbye
        action = agent.act(obs)
        if (action.get("content") or "").startswith("Thank you"):
            break
        obs, reward, terminated, truncated, info = env.step(action)
        assert not (terminated or truncated)
    reward = env.finish()
    trajectory = env.trajectory()
    assert reward == 1.0 and trajectory.reward == 1.0 and trajectory.terminated and not trajectory.truncated
    assert trajectory.termination_reason == "stopped_by_trainer" and trajectory.reward_info["reward"] == 1.0
    assert env.finish() == 1.0  # an episode already over is left as it is
    obs, reward, terminated, truncated, info = env.step("more?")
    assert "reset" in info["error"] and reward == 0.0

    env.reset(options={"task_id": "mock-cancel-card"})
    env.step("Hello, how can I help?")
    assert env.finish("budget") == 0.0 and env.trajectory().termination_reason == "budget"  # nothing done: no pay

    obs, info = env.reset(options={"task_id": "mock-cancel-card"})
    agent = OracleAgent(env.core.task)
    while True:  # the play that finish() paid 1.0 above
        action = agent.act(obs)
        if (action.get("content") or "").startswith("Thank you"):
            break
        obs, *_ = env.step(action)
    assert env.finish("agent_error", score=False) == 0.0  # unscored: ended truncated whatever the world holds
    assert env.trajectory().truncated and env.trajectory().termination_reason == "agent_error"


def test_finish_keeps_a_truncated_episode_at_zero():
    env = mua_gym.make("mua/Mock-v0", max_turns=1).unwrapped
    env.reset(options={"task_id": "mock-cancel-card"})
    *_, truncated, info = env.step("Hello")
    assert truncated and env.finish() == 0.0 and env.trajectory().termination_reason == "max_turns"


def test_finish_pays_nothing_where_the_world_alone_would_pay_a_blind_agent():
    """Some TAU2 tasks need no write and are scored on the world only: an untouched world is their gold one.
    A rollout cut short there must not be paid unless the agent made the gold's calls, or a trainer's policy
    learns to stop at once; tau2's own rules would pay it (``parity_reward``)."""
    pytest.importorskip("tau2")
    from mua_gym.env.episode import prepare_task

    env = mua_gym.make("mua/Airline-v0", world="tau2", split="test").unwrapped
    blind = [t for t in env.core.tasks("test") if prepare_task(env.domain, t).blind_paid]
    scored = [t for t in env.core.tasks("test") if not prepare_task(env.domain, t).blind_paid]
    assert blind and scored
    env.reset(options={"task": blind[0]})
    assert env.finish() == 0.0
    trajectory = env.trajectory()
    assert trajectory.terminated and trajectory.termination_reason == "stopped_by_trainer"
    assert trajectory.reward_info["parity_reward"] == 1.0  # tau2's rules pay it
    # The gold's look-ups made, then a stop: paid only on a judge's verdict (looking up and stopping meets the
    # world and the calls alike).
    judged = next(t for t in blind if t.evaluation.nl_assertions and any(a.requestor == "assistant"
                                                                           for a in t.gold_actions))

    async def agrees(messages, assertions):
        return [True] * len(assertions)

    for judge, paid in ((None, 0.0), (agrees, 1.0)):
        env = mua_gym.make("mua/Airline-v0", world="tau2", split="test", judge=judge).unwrapped
        env.reset(options={"task": judged})
        assert env.finish() == 0.0  # the gold's look-ups not made: not even a judge pays it
        env.reset(options={"task": judged})
        for call in judged.gold_actions:
            env.step({"name": call.name, "arguments": call.arguments})
        assert env.finish() == paid, judge
    env.reset(options={"task": scored[0]})
    assert env.finish() == 0.0 and env.trajectory().terminated  # scored, and nothing done earns nothing
    generated = mua_gym.make("mua/Airline-v0", split="test").unwrapped
    assert not any(prepare_task(generated.domain, t).blind_paid for t in generated.core.tasks("test"))


def test_chat_step_answers_every_call_of_the_reply_it_returns():
    import asyncio

    from mua_gym.env.parsing import MAX_TOOL_CALLS

    env = mua_gym.make_async("mua/Mock-v0")

    async def play():
        await env.reset(options={"task_id": "mock-cancel-card"})
        call = {"type": "function", "function": {"name": "find_customer_by_email",
                                                 "arguments": '{"email": "ana@example.com"}'}}
        twice = {"role": "assistant", "content": None, "tool_calls": [dict(call, id="same"), dict(call, id="same")]}
        reply, (observation, *_) = await env.chat_step(twice)  # repeated ids: the env's own ids come back
        ids = [c["id"] for c in reply["tool_calls"]]
        assert len(set(ids)) == 2 and [m["tool_call_id"] for m in observation] == ids
        text = '<tool_call>{"name": "find_customer_by_email", "arguments": {"email": "ana@example.com"}}</tool_call>'
        reply, (observation, *_) = await env.chat_step({"role": "assistant", "content": text}, text)
        assert reply["tool_calls"][0]["id"] == observation[0]["tool_call_id"]  # read from the text, made structured
        flood = {"role": "assistant", "content": None,
                 "tool_calls": [dict(call, id=f"c{i}") for i in range(MAX_TOOL_CALLS + 1)]}
        reply, (observation, _, _, _, info) = await env.chat_step(flood)
        assert "error" in info and [m["tool_call_id"] for m in observation] == [f"c{i}" for i in range(257)]
        assert all(m["content"].startswith("Error: ") for m in observation)
        nameless = {"role": "assistant", "content": "x", "tool_calls": [dict(call)] * (MAX_TOOL_CALLS + 1)}
        reply, (observation, *_) = await env.chat_step(nameless)  # no ids to answer: the error goes to the user
        assert "tool_calls" not in reply and observation[0]["role"] == "user"

    asyncio.run(play())


def test_an_unknown_split_fails_at_make_naming_the_nearest():
    with pytest.raises(ValueError, match=r"not 'tset' \(did you mean 'test'\?\)"):
        mua_gym.make("mua/Retail-v0", split="tset")


def test_the_gymnasium_face_shows_what_users_read_of_an_episode():
    env = mua_gym.make("mua/Mock-v0")
    try:
        facade = env.unwrapped
        assert facade.task is None and facade.done and facade.void is None
        env.reset(seed=0)
        assert facade.task is facade.core.task and facade.task is not None and not facade.done
        assert facade.policy == facade.core.policy and facade.messages() == facade.core.messages()
        assert [m.role for m in facade.messages()] == ["system", "user"]
    finally:
        env.close()
