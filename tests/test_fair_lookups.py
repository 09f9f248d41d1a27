"""The fair agent looks up, with read calls filled only with values it has seen, what TAU2's gold plans use but
never show (an item id, a bill id, a reservation's payment), and never writes a value it has not seen."""

import json
import re

import pytest

import mua_gym
from mua_gym import MuaEnv
from mua_gym.eval.agents import FairAgent, OracleAgent, is_subset_sum, next_days
from mua_gym.kit.fairness import Knowledge, episode_knowledge, free_arguments, leaf_values
from mua_gym.user_sims.tau2_scenario import playable

from episodes import run
from test_tau2_scenario_user import DOMAINS, _tau2_or_skip

#: The playable test tasks the fair agent solves by tau2's rules: all of them, as the oracle does.
FLOORS = {"retail": 1.0, "airline": 1.0, "telecom": 1.0}


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
            next_to_told: set[str] = set()  # the days next to a date a result showed (a search on "the day after")
            gold = {a.name: a for a in task.gold_actions}
            for m in messages:
                for call in getattr(m, "tool_calls", None) or []:
                    arguments = json.loads(call.function.arguments)
                    free = free_arguments(gold[call.function.name]) if call.function.name in gold else frozenset()
                    unseen = [v for k, v in arguments.items() if k not in free for v in leaf_values(v)
                              if not told.knows(v) and v not in next_to_told]
                    assert not unseen, (domain, task.id, call.function.name, unseen)
                    writes += kinds.get(call.function.name) == "write"
                if m.role in ("system", "user", "tool") and m.content:
                    told.learn(m.content)
                    next_to_told.update(day for date in re.findall(r"\d{4}-\d{2}-\d{2}", m.content)
                                        for day in next_days(date))
    assert writes > 10


def test_on_generated_tasks_it_looks_nothing_up():
    task = mua_gym.get_domain("retail").tasks("test")[0]
    assert FairAgent(task).look_up is False and FairAgent(task, lookups=True).look_up is True


def _row(played, domain, task_id):
    return next(r for r in played[domain] if r[0].id == task_id)


def test_a_price_nobody_says_is_found_by_listing_products_the_user_named(played):
    task, agent, fair, *_ = _row(played, "retail", "39")
    assert task.evaluation.communicate_info == ["46.66"]
    names = [name for name, _ in agent.lookups]
    # the listing comes once the look-ups with arguments are spent, then the product the user named: the t-shirt
    assert "list_all_product_types" in names and names[names.index("list_all_product_types") + 1] == \
        "get_product_details"
    assert fair == 1.0 and not agent.gave_up


def test_a_total_is_the_sum_of_numbers_results_listed_under_one_key(played):
    for domain, task_id in (("retail", "108"), ("airline", "18")):
        task, agent, fair, _, messages, _ = _row(played, domain, task_id)
        total = task.evaluation.communicate_info[0]
        assert not any(total in (m.content or "") for m in messages if m.role == "tool")  # no result shows it
        assert fair == 1.0 and not agent.gave_up, (domain, task_id)


def test_the_day_after_a_reservation_is_searched_with_a_tool_that_shows_flights(played):
    task, agent, fair, *_ = _row(played, "airline", "16")
    assert ("search_onestop_flight", {"origin": "ATL", "destination": "PHL", "date": "2024-05-24"}) in agent.lookups
    assert not any(name == "get_flight_status" for name, _ in agent.lookups)  # it needs the flight number it seeks
    assert fair == 1.0


def test_next_days_and_subset_sums():
    assert next_days("2024-05-31") == ["2024-05-30", "2024-06-01"]
    assert next_days("2024-02-30") == [] and next_days("May 3") == [] and next_days("12024-05-30") == []
    assert is_subset_sum([12.5, 30.0, 7.25, 100.0], 49.75) and is_subset_sum([-6594, 3925], 10519)
    assert not is_subset_sum([12.5, 30.0], 12.5)  # one number alone is no total: it was shown as it is
    assert not is_subset_sum([12.5, 30.0, 7.25], 50.0) and not is_subset_sum([], 0.0)


def test_a_number_that_is_no_total_of_what_was_shown_is_never_said():
    task = next(t for t in mua_gym.get_domain("retail").tasks("test") if t.evaluation.communicate_info)
    agent = FairAgent(task, lookups=True)
    agent.reset({})
    agent._learn([{"role": "tool", "content": json.dumps({"items": [{"price": 10.0}, {"price": 20.0}]})}])
    assert agent.knows("30.0") and agent.knows(30) and not agent.knows("35.0") and not agent.knows("10.5")
    assert not any(agent.knows(word) for word in ("nan", "Infinity", "-inf", "1e999"))  # words, never totals
