"""The fair agent looks up, with read calls filled only with values it has seen, what TAU2's gold plans use but
never show (an item id, a bill id, a reservation's payment), and never writes a value it has not seen."""

import json

import pytest

import mua_gym
from mua_gym import MuaEnv
from mua_gym.agents import FairAgent, OracleAgent
from mua_gym.fairness import Knowledge, episode_knowledge, free_arguments, leaf_values
from mua_gym.user_sims.tau2_scenario import playable

from episodes import run
from test_tau2_scenario_user import DOMAINS, _tau2_or_skip

#: The playable test tasks the fair agent solves by tau2's rules, at the least (retail misses a "cheapest t-shirt"
#: price, found only by listing every product, and a refund summed over three items; airline's misses need a
#: flight search on the day after a reservation's date, a date nothing shows).
FLOORS = {"retail": 16 / 18, "airline": 1 / 3, "telecom": 1.0}


@pytest.fixture(scope="module")
def played():
    """{domain: [(task, fair agent, fair parity reward, oracle parity reward, the episode's messages, reset info)]}
    over every playable TAU2 test task."""
    _tau2_or_skip()
    envs = {domain: MuaEnv(domain, world="tau2", user="scenario", split="test") for domain in DOMAINS}
    return {domain: [_episode(env, task) for task in env.core.tasks("test") if playable(task) is None]
            for domain, env in envs.items()}


def _episode(env, task):
    """(task, fair agent, its parity reward, the oracle's, the fair episode's messages, the reset info)."""
    agent = FairAgent(task)
    _, info = env.reset(options={"task": task})
    fair = run(env, task, agent)[3]["reward_info"]["parity_reward"]
    messages = env.unwrapped.trajectory().messages
    return task, agent, fair, run(env, task, OracleAgent(task))[3]["reward_info"]["parity_reward"], messages, info


def test_an_item_id_nobody_says_is_found_by_look_ups_from_the_users_name_and_zip(played):
    task, agent, fair, *_ = next(r for r in played["retail"] if r[0].id == "70")
    assert [a.name for a in task.gold_actions] == ["exchange_delivered_order_items"]  # the plan holds no look-up
    names = [name for name, _ in agent.lookups]
    assert names[:2] == ["find_user_id_by_name_zip", "get_user_details"] and "get_product_details" in names
    assert fair == 1.0 and not agent.gave_up


def test_the_fair_agent_reaches_its_floor_on_each_tau2_test_split_and_the_oracle_all(played):
    for domain, rows in played.items():
        assert rows and all(oracle == 1.0 for *_, oracle, _, _ in rows), domain
        solved = sum(fair == 1.0 for _, _, fair, *_ in rows) / len(rows)
        print(f"{domain}: fair {solved:.3f} of {len(rows)} playable tasks by tau2's rules")
        assert solved >= FLOORS[domain] - 1e-9, (domain, solved)


def test_every_call_the_fair_agent_makes_uses_only_values_it_was_shown(played):
    writes = 0
    for domain, rows in played.items():
        dom = mua_gym.get_domain(domain)
        kinds = {name: dom.tools[name].kind for name in dom.tools.tools}
        for task, _, _, _, messages, info in rows:
            told = Knowledge(episode_knowledge(dom, task.world.source, info))
            gold = {a.name: a for a in task.gold_actions}
            for m in messages:
                for call in getattr(m, "tool_calls", None) or []:
                    arguments = json.loads(call.function.arguments)
                    free = free_arguments(gold[call.function.name]) if call.function.name in gold else frozenset()
                    unseen = [v for k, v in arguments.items() if k not in free for v in leaf_values(v)
                              if not told.knows(v)]
                    assert not unseen, (domain, task.id, call.function.name, unseen)
                    writes += kinds.get(call.function.name) == "write"
                if m.role in ("system", "user", "tool") and m.content:
                    told.learn(m.content)
    assert writes > 10


def test_on_generated_tasks_it_looks_nothing_up():
    task = mua_gym.get_domain("retail").tasks("test")[0]
    assert FairAgent(task).look_up is False and FairAgent(task, lookups=True).look_up is True
