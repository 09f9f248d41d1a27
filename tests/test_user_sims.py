import asyncio
import time

import litellm
import pytest

import mua_gym
from mua_gym import MuaEnv, Persona, Task, Trajectory
from mua_gym.eval.agents import OracleAgent
from mua_gym.user_sims import ReplayUser, ScenarioUser, make_user, sample_persona
from mua_gym.user_sims.llm import LLMUser
from mua_gym.user_sims.reply_memo import ResponseMemo

from scripted_llm import SEEN, script


def run(env, agent_fn, obs, max_steps=50):
    for _ in range(max_steps):
        obs, reward, terminated, truncated, info = env.step(agent_fn(obs))
        if terminated or truncated:
            return reward, terminated, truncated, info
    raise AssertionError("episode did not end")


def test_llm_user_conversation_role_flip_and_stop():
    model = script("convo", ["Hi, I'd like to cancel order O1001. My email is ana@example.com.",
                             "Yes, go ahead.", "###STOP###"])
    env = MuaEnv("mock", user=f"litellm:{model}", user_kwargs={"temperature": 0})
    obs, info = env.reset(options={"task_id": "mock-cancel-card"})
    assert obs[-1] == {"role": "user", "content": "Hi, I'd like to cancel order O1001. My email is ana@example.com."}
    obs, *_ = env.step({"name": "get_order", "arguments": {"order_id": "O1001"}})
    obs, *_ = env.step("<think>secret plan</think>Shall I cancel O1001?")
    assert obs[-1]["content"] == "Yes, go ahead."
    obs, reward, terminated, truncated, info = env.step("Done!")
    assert terminated and info["termination_reason"] == "user_stop"
    last_request = SEEN["convo"][-1]
    assert last_request[0]["role"] == "system" and "Cancel" not in last_request[0]["content"][:20]
    flipped = [(m["role"], m.get("content")) for m in last_request[1:]]
    # The agent's texts arrive as 'user'; the customer's own lines are 'assistant'; no tool traffic, no <think>.
    assert flipped == [("user", "Hi! How can I help you today?"),
                       ("assistant", "Hi, I'd like to cancel order O1001. My email is ana@example.com."),
                       ("user", "Shall I cancel O1001?"), ("assistant", "Yes, go ahead."), ("user", "Done!")]
    assert all("secret plan" not in str(m) for m in last_request)
    traj = env.unwrapped.trajectory()
    assert traj.usage["total_tokens"] == 45 and traj.user == f"litellm:{model}"


def test_llm_user_tools_run_inside_its_turn():
    model = script("phone", ["My notifications are off.", {"tool_calls": [("toggle_notifications", {})]},
                             "Done, they're on now. ###STOP###"])
    from mua_gym import EnvAssertion, EvaluationSpec

    task = Task(id="phone", domain="mock", script=["x"],
                evaluation=EvaluationSpec(reward_basis=["ENV_ASSERTION"],
                                          env_assertions=[EnvAssertion(name="notifications_on")]))
    env = MuaEnv("mock", user=f"litellm:{model}")
    env.reset(options={"task": task})
    obs, reward, terminated, truncated, info = env.step("Please switch notifications on in the app.")
    assert obs == [{"role": "user", "content": "Done, they're on now. ###STOP###"}] and reward == 1.0
    offered = SEEN["phone"][1]
    assert offered[-1]["content"] == "Please switch notifications on in the app."
    after_tool = SEEN["phone"][2]
    assert after_tool[-1]["role"] == "tool" and "notifications are now on" in after_tool[-1]["content"]


@pytest.mark.parametrize("error", [
    litellm.RateLimitError("slow down", llm_provider="scripted", model="x"),
    litellm.Timeout("took too long", llm_provider="scripted", model="x"),
    litellm.ServiceUnavailableError("503", llm_provider="scripted", model="x"),
])
def test_llm_user_retries_then_recovers(error):
    model = script(f"flaky-{type(error).__name__}", ["Hello, I need help.", error, error, "Thanks, bye. ###STOP###"])
    env = MuaEnv("mock", user=f"litellm:{model}", user_kwargs={"backoff": 0.001, "max_retries": 3})
    env.reset(options={"task_id": "mock-cancel-card"})
    obs, reward, terminated, truncated, info = env.step("How can I help?")
    assert terminated and obs[-1]["content"].endswith("###STOP###")


def test_llm_user_failure_after_retries_is_user_error_not_an_exception():
    error = litellm.RateLimitError("sk-abcdefghijklmnop rate limited", llm_provider="scripted", model="x")
    model = script("down", ["Hello.", error])
    env = MuaEnv("mock", user=f"litellm:{model}", user_kwargs={"backoff": 0.001, "max_retries": 2})
    env.reset(options={"task_id": "mock-cancel-card"})
    obs, reward, terminated, truncated, info = env.step("How can I help?")
    assert truncated and info["termination_reason"] == "user_error" and reward == 0.0
    assert "after 3 tries" in info["user_error"]
    assert "sk-abcdefghijklmnop" not in info["user_error"]  # secrets never reach info or trajectories
    assert "sk-abcdefghijklmnop" not in env.unwrapped.trajectory().to_json_line()


def test_empty_and_out_of_role_replies_are_corrected_once():
    model = script("empty-once", ["Hello.", "", "Sure, go ahead. ###STOP###"])
    env = MuaEnv("mock", user=f"litellm:{model}")
    env.reset(options={"task_id": "mock-cancel-card"})
    obs, *_ = env.step("Shall I?")
    assert obs[-1]["content"] == "Sure, go ahead. ###STOP###"
    assert "your last reply was empty" in SEEN["empty-once"][-1][-1]["content"]

    model = script("agentish", ["Hello.", "How can I help you today?", "As an AI, I cannot shop."])
    env = MuaEnv("mock", user=f"litellm:{model}")
    env.reset(options={"task_id": "mock-cancel-card"})
    *_, truncated, info = env.step("Shall I?")
    assert truncated and info["termination_reason"] == "user_error" and "support agent" in info["user_error"]


def test_response_memo_replays_exactly(tmp_path):
    memo = ResponseMemo(tmp_path / "memo.sqlite")
    model = script("memo", ["Hello there.", "Yes please.", "###STOP###"])
    first = MuaEnv("mock", user=LLMUser(model, memo=memo, api_key="sk-secret-key-123456"))
    first.reset(options={"task_id": "mock-cancel-card"})
    first.step("Shall I cancel?")
    calls = len(SEEN["memo"])
    script("memo", ["DIFFERENT", "DIFFERENT", "DIFFERENT"])  # the model changed; the memo did not
    second = MuaEnv("mock", user=LLMUser(model, memo=memo, api_key="sk-secret-key-123456"))
    obs, _ = second.reset(options={"task_id": "mock-cancel-card"})
    obs2, *_ = second.step("Shall I cancel?")
    assert obs[-1]["content"] == "Hello there." and obs2[-1]["content"] == "Yes please."
    assert len(SEEN["memo"]) == 0 and calls == 2 and memo.hits == 2
    assert b"sk-secret-key" not in (tmp_path / "memo.sqlite").read_bytes()


def test_two_hundred_concurrent_llm_episodes_share_one_loop():
    model = script("slow", ["Hi, please cancel O1001. ana@example.com", "Yes, go ahead.", "###STOP###"], delay=0.05)
    task = mua_gym.get_domain("mock").tasks("train")[0]

    async def episode():
        env = mua_gym.AsyncMuaEnv("mock", user=LLMUser(model))
        obs, info = await env.reset(options={"task": task})
        agent = OracleAgent(task)
        while True:
            obs, reward, terminated, truncated, info = await env.step(await agent.aact(obs))
            if terminated or truncated:
                return env.trajectory().turns

    async def main(n):
        gaps = []
        running = True

        async def heartbeat():  # measures how long the loop is ever held up
            last = time.perf_counter()
            while running:
                await asyncio.sleep(0.01)
                now = time.perf_counter()
                gaps.append(now - last - 0.01)
                last = now

        beat = asyncio.create_task(heartbeat())
        start = time.perf_counter()
        turns = await asyncio.gather(*(episode() for _ in range(n)))
        elapsed = time.perf_counter() - start
        running = False
        await beat
        return elapsed, turns, max(gaps)

    asyncio.run(main(1))  # warm litellm up (its first call imports and builds a lot)
    one, _, _ = asyncio.run(main(1))
    many, turns, worst_gap = asyncio.run(main(200))
    print(f"1 episode: {one:.3f}s; 200 concurrent: {many:.3f}s (serial would take ~{200 * one:.1f}s); "
          f"longest event-loop stall {worst_gap * 1000:.0f} ms")
    assert len(turns) == 200 and set(turns) == {turns[0]}
    # The user's 50 ms waits overlap. What bounds the total is CPU, not waiting: litellm spends ~7 ms of CPU
    # per call here, so 600 user turns cost seconds however well they overlap. (The longest stall is the burst
    # of 200 simultaneous starts, each running litellm's synchronous preamble before its first await.)
    assert many < 200 * one / 2


def test_scenario_user_with_oracle_solves_every_generated_test_task():
    for name in mua_gym.available_domains():
        domain = mua_gym.get_domain(name)
        if "generated" not in domain.task_sources:
            continue
        env = MuaEnv(name, user="scenario", split="test")
        tasks = env.unwrapped.core.tasks() if hasattr(env, "unwrapped") else env.core.tasks()
        failures = []
        for task in tasks:
            obs, info = env.reset(options={"task": task})
            agent = OracleAgent(task)
            reward, terminated, truncated, info = run(env, agent.act, obs)
            if reward != 1.0:
                failures.append((task.id, info.get("termination_reason")))
        print(f"{name}: ScenarioUser + oracle solved {len(tasks) - len(failures)}/{len(tasks)}")
        assert not failures, (name, failures[:5])


def test_scenario_user_answers_from_the_scenario():
    retail = mua_gym.get_domain("retail")
    task = next(t for t in retail.tasks("test") if "email" in t.user_scenario.facts and
                "order_id" in t.user_scenario.intents[0])
    user = ScenarioUser(persona=Persona(disclosure="minimal"))
    opening = asyncio.run(user.start(task))
    assert task.user_scenario.facts["email"] not in opening.content
    from mua_gym.messages import AssistantMessage as A

    reply = asyncio.run(user.respond([A(content="Could you tell me your email address?")]))
    assert task.user_scenario.facts["email"] in reply.content
    # A bare "shall I?" states no plan to agree to; a plan that names the order does.
    assert asyncio.run(user.respond([A(content="Shall I proceed with this change?")])).content.startswith("What")
    order = task.user_scenario.intents[0]["order_id"]
    assert asyncio.run(user.respond([A(content=f"I can change order {order} as you asked. Shall I proceed?")]
                                    )).content.startswith("Yes")
    assert "user id" in asyncio.run(user.respond([A(content="What is your user id?")])).content
    assert asyncio.run(user.respond([A(content="You are being transferred to a human agent.")])).content == \
        "###TRANSFER###"


def test_personas_walk_away_and_sampling():
    impatient = Persona(patience=2)
    env = MuaEnv("mock", user=ScenarioUser(persona=impatient))
    env.reset(options={"task_id": "mock-cancel-card"})
    env.step("Hello.")
    env.step("Hello?")
    obs, reward, terminated, truncated, info = env.step("Hello??")
    assert terminated and info["termination_reason"] == "user_walked_away" and reward == 0.0
    import numpy as np

    a = sample_persona(np.random.default_rng(1))
    assert a == sample_persona(np.random.default_rng(1))
    assert len({sample_persona(np.random.default_rng(s)).model_dump_json() for s in range(20)}) > 10


def test_replay_user_replays_a_recording():
    env = MuaEnv("mock", user="scenario")
    task = mua_gym.get_domain("mock").tasks("train")[0]
    obs, info = env.reset(options={"task": task})
    agent = OracleAgent(task)
    run(env, agent.act, obs)
    recording = env.trajectory()
    replay_env = MuaEnv("mock", user=ReplayUser(recording.to_json_line()))
    obs, info = replay_env.reset(options={"task": task})
    agent = OracleAgent(task)
    reward, *_ = run(replay_env, agent.act, obs)
    replayed = replay_env.trajectory()
    assert [m.content for m in replayed.messages if m.role == "user"] == \
        [m.content for m in recording.messages if m.role == "user"]
    assert reward == 1.0 and isinstance(recording, Trajectory)


def test_user_selection_by_string():
    assert make_user("scripted").name == "scripted" and make_user("scenario").name == "scenario"
    assert make_user("litellm:openai/gpt-4o-mini", api_base="http://127.0.0.1:1").name == "litellm:openai/gpt-4o-mini"
    with pytest.raises(ValueError, match="unknown user simulator"):
        make_user("telepathy")


def test_llm_judge_through_litellm():
    model = script("judge", ['Sure: {"verdicts": [{"statement": 1, "true": true}, {"statement": 2, "true": false}]}'])
    from mua_gym import EvaluationSpec

    task = Task(id="nl", domain="mock", script=["Hi."],
                evaluation=EvaluationSpec(reward_basis=["NL_ASSERTION"], nl_assertions=["greets", "says bye"]))
    env = MuaEnv("mock", judge=f"litellm:{model}", user="scripted")
    env.reset(options={"task": task})
    *_, reward, terminated, truncated, info = env.step("Hello!")
    assert terminated and reward == 0.0 and info["reward_info"]["nl_assertions"] == [True, False]
    assert "greets" in SEEN["judge"][0][0]["content"]
