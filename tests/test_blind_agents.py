"""Blind agents (no tool calls, no look at the task) must earn nothing: mean reward <= 1% on every domain's test
split, with the scenario user and, where it is the default, the scripted one."""

import time

import pytest

from mua_gym import MuaEnv
from mua_gym.eval.baselines import ANYTHING, BLIND_AGENTS, CLOSING, BlindAgent, mixed_agent, request_lines
from mua_gym.domains.telecom.user_requests import SETTINGS, VOCABULARY
from mua_gym.user_sims.tool_requests import REQUEST_WORDS

from episodes import run

DOMAIN_USERS = [("retail", "scenario"), ("retail", "scripted"), ("airline", "scenario"), ("airline", "scripted"),
                ("telecom", "scenario"), ("mock", "scenario"), ("mock", "scripted")]
_ENVS: dict = {}


def _env(domain: str, user: str) -> MuaEnv:
    if (domain, user) not in _ENVS:
        _ENVS[domain, user] = MuaEnv(domain, user=user, split="test")
    return _ENVS[domain, user]


@pytest.mark.parametrize("domain, user", DOMAIN_USERS)
@pytest.mark.parametrize("script", sorted(BLIND_AGENTS))
def test_blind_scripts_earn_nothing_on_the_test_split(domain, user, script):
    env = _env(domain, user)
    tasks = env.core.tasks("test")
    assert tasks
    started = time.perf_counter()
    total, paid = 0.0, []
    for task in tasks:
        reward, terminated, truncated, info = run(env, task, BLIND_AGENTS[script]())
        assert info["tool_calls"] == 0  # blind: it never called a tool
        assert info["termination_reason"] != "user_error", info.get("user_error")  # the user understood every line
        total += reward
        if reward > 0:
            paid.append(task.id)
    mean = total / len(tasks)
    print(f"\n{domain}/{user}/{script}: mean reward {mean:.4f} over {len(tasks)} test tasks "
          f"({time.perf_counter() - started:.2f}s)")
    assert mean <= 0.01, (mean, paid[:5])


def test_the_request_script_says_every_request_word_and_phone_request_the_user_knows():
    lines = [line.lower() for line in request_lines(VOCABULARY)]
    assert all(any(line.startswith(word) or line.startswith(f"please {word}") for line in lines)
               for word in REQUEST_WORDS if word != "please") and any(line.startswith("please") for line in lines)
    examples = [e for s in SETTINGS for e in s.examples]
    assert all(any(e in line for line in lines) for e in examples)


def test_the_asking_scripts_say_the_words_of_the_episodes_domain():
    """They read the domain's declared vocabulary at reset (never the task): telecom's phone requests on telecom,
    every request word alone where the user understands none in words."""
    for name, expected in (("requests", request_lines), ("mixed", lambda v: mixed_agent(request_lines(v)).lines)):
        agent = BLIND_AGENTS[name]()
        for domain, vocabulary in (("telecom", VOCABULARY), ("retail", None), ("telecom", VOCABULARY)):
            agent.reset({"domain": domain, "task_id": "ignored"})
            assert list(agent.lines) == list(expected(vocabulary)), (name, domain)
    assert all(ANYTHING in line for line in request_lines(None))
    assert any("airplane mode" in line for line in request_lines(VOCABULARY))


def test_blind_agents_only_talk_and_ignore_what_they_see():
    for make in BLIND_AGENTS.values():
        agent = make()
        agent.reset({"tools": [{"function": {"name": "cancel_order"}}]})
        said = [agent.act([{"role": "user", "content": f"Turn {i}: please cancel O1001."}]) for i in range(120)]
        assert all(isinstance(s, str) and s for s in said)
        again = make()
        again.reset({})
        assert said == [again.act([]) for _ in range(120)]  # what it sees changes nothing
    requests = BLIND_AGENTS["requests"]()
    said = [requests.act([]) for _ in range(len(request_lines()) + 2)]
    assert said[-2:] == [CLOSING, CLOSING]
    with pytest.raises(ValueError):
        BlindAgent([])
