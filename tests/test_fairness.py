"""Every generated task is solvable from what the agent is told: the generator's fairness check, the scenario
user's plain answers, and a fair agent (gold calls, asking for every value it has not seen) scoring 1.0."""

import asyncio

import numpy as np
import pytest

import mua_gym
from mua_gym import MuaEnv, Persona
from mua_gym.eval.agents import ARGUMENT_QUESTIONS, FairAgent
from mua_gym.kit.fairness import Knowledge, unfair_values, user_disclosures
from mua_gym.messages import AssistantMessage
from mua_gym.env.episode import prepare_task
from mua_gym.kit.generation import generate_tasks
from mua_gym.user_sims.scenario import ScenarioUser

from episodes import run

GENERATED = ["retail", "airline", "telecom"]
SPLITS = ["train", "dev", "test"]


def _fair_episodes(env: MuaEnv, tasks: list) -> list[tuple]:
    """(task id, reward, termination, values the agent gave up on) for every task the fair agent does not solve."""
    failures = []
    for task in tasks:
        agent = FairAgent(task)
        reward, _, _, info = run(env, task, agent)
        if reward != 1.0 or agent.gave_up:
            failures.append((task.id, reward, info["termination_reason"], agent.gave_up))
    return failures


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("name", GENERATED)
def test_fair_agent_solves_every_generated_task_with_the_scenario_user(name, split):
    domain = mua_gym.get_domain(name)
    tasks = domain.tasks(split)
    env = MuaEnv(name, user="scenario", split=split)
    failures = _fair_episodes(env, tasks)
    stats = tasks.stats
    print(f"{name} {split}: fair agent solved {len(tasks) - len(failures)}/{len(tasks)}; generation proposed "
          f"{stats.proposed}, dropped {stats.unfair} as unfair, {stats.failed} as failing")
    assert not failures, failures[:5]
    assert stats.proposed == len(tasks) + stats.unfair + stats.failed


@pytest.mark.parametrize("disclosure", ["minimal", "forthcoming"])
@pytest.mark.parametrize("name", GENERATED)
def test_fair_agent_solves_every_test_task_whatever_the_disclosure(name, disclosure):
    env = MuaEnv(name, user=ScenarioUser(persona=Persona(disclosure=disclosure, patience=40)), split="test")
    assert not _fair_episodes(env, mua_gym.get_domain(name).tasks("test"))


def test_fair_agent_solves_the_mock_tasks():
    domain = mua_gym.get_domain("mock")
    env = MuaEnv("mock", user="scenario")
    for split in SPLITS:
        assert not _fair_episodes(env, domain.tasks(split)), split


def _unknown_user_id(task):
    """``task`` with a user who does not know their user id (the airline scenario before this check)."""
    scenario = task.user_scenario.model_copy(update={"facts": {**task.user_scenario.facts, "unknown": ["user_id"]}})
    return task.model_copy(update={"user_scenario": scenario})


def test_checker_flags_a_user_id_nobody_says_and_the_fair_agent_cannot_use_it():
    airline = mua_gym.get_domain("airline")
    task = next(t for t in airline.tasks("test") if t.category in ("cancel", "change_cabin", "add_bags"))
    results = prepare_task(airline, task).gold_results
    assert unfair_values(airline, task, results) == []
    uid = task.user_scenario.facts["user_id"]
    unfair = _unknown_user_id(task)
    assert unfair_values(airline, unfair, results) == [f"get_user_details.user_id={uid!r}"]
    env = MuaEnv("airline", user="scenario", split="test")
    reward, *_ = run(env, unfair, FairAgent(unfair))
    calls = [c for m in env.trajectory().messages for c in getattr(m, "tool_calls", None) or []]
    assert reward == 0.0 and not calls  # it asked, heard nothing, and never used the id


def _silent_about_the_order(task):
    """A retail cancel task whose customer never names the order (neither in words nor as a fact)."""
    intent = {k: v for k, v in task.user_scenario.intents[0].items() if k != "order_id"}
    intent["says"] = "Please cancel one of my orders; I don't need it anymore."
    scenario = task.user_scenario.model_copy(update={"intents": [intent]})
    return task.model_copy(update={"user_scenario": scenario})


def test_checker_flags_an_order_nobody_names_and_the_generator_drops_it():
    retail = mua_gym.get_domain("retail")
    fair = next(t for t in retail.tasks("test") if t.category == "cancel")
    unfair = _silent_about_the_order(fair)
    oid = fair.user_scenario.intents[0]["order_id"]
    results = prepare_task(retail, fair).gold_results
    assert f"get_order_details.order_id={oid!r}" in unfair_values(retail, unfair, results)
    assert unfair_values(retail, fair, results) == []

    def make(rng: np.random.Generator, user: int, level: int, task_id: str):
        chosen = unfair if rng.random() < 0.5 else fair
        return chosen.model_copy(update={"id": task_id})

    tasks = generate_tasks(retail, "test", n_users=500, count=6, seed=0, difficulty=1, make=make)
    assert len(tasks) == 6 and tasks.stats.unfair > 0
    assert tasks.stats.proposed == 6 + tasks.stats.unfair and tasks.stats.failed == 0
    assert all(t.user_scenario.intents[0].get("order_id") == oid for t in tasks)
    assert oid in tasks.stats.unfair_examples[0][1][0]


def test_knowledge_rules():
    told = Knowledge()
    told.learn('{"price": 19.0, "other": 22.25} Not now. Rate: $100 per passenger. Ship to 12 Birch Lane, Apt 4.')
    assert told.knows("12 Birch Lane") and told.knows("birch lane") and not told.knows("Birch La")
    assert not told.knows("no") and told.knows("not") and told.knows("") and told.knows(None) and told.knows(True)
    assert told.knows(19) and told.knows(41.25) and told.knows(3.25) and told.knows(300) and told.knows(7)
    assert not told.knows(42.25) and not told.knows(1100) and not told.knows(7777.77)
    assert told.knows("19.0 + 22.25") and not told.knows("19.0 + 23.25")


FACT_KEYS = ("user_id", "email", "first_name", "last_name", "zip", "phone_number")
INTENT_KEYS = ("order_id", "reservation_id", "payment_method_id", "payment_id", "passengers")


def _fact_values(value):
    if isinstance(value, list):
        return [str(v) for p in value for v in (p.values() if isinstance(p, dict) else [p])]
    return [str(value)]


@pytest.mark.parametrize("disclosure", ["minimal", "normal", "forthcoming"])
def test_every_disclosure_level_answers_a_plain_question_for_every_fact(disclosure):
    asked = 0
    for name in GENERATED:
        for task in mua_gym.get_domain(name).tasks("test")[:60]:
            facts = task.user_scenario.facts
            intent = task.user_scenario.intents[0]
            wanted = [(k, facts[k]) for k in FACT_KEYS if k in facts and k not in facts.get("unknown", ())]
            wanted += [(k, intent[k]) for k in INTENT_KEYS if k in intent]
            for key, value in wanted:
                user = ScenarioUser(persona=Persona(disclosure=disclosure))
                asyncio.run(user.start(task))
                question = [AssistantMessage(content=ARGUMENT_QUESTIONS[key])]
                if key in (intent.get("withhold") or {}) or key in (intent.get("first_says") or {}):
                    # held back until asked again or until identified, or given wrong first: asked twice, after
                    # the user has said who it is
                    asyncio.run(user.respond([AssistantMessage(content="What is your email address? What is your "
                                                                       "name and zip code? What is your user id?")]))
                    asyncio.run(user.respond(question))
                reply = asyncio.run(user.respond(question)).content
                assert all(v in reply for v in _fact_values(value)), (task.id, key, value, reply)
                asked += 1
    assert asked > 300


def test_a_user_who_does_not_know_their_user_id_says_so_and_offers_their_identity():
    task = next(t for t in mua_gym.get_domain("retail").tasks("test") if "email" in t.user_scenario.facts)
    user = ScenarioUser(persona=Persona(disclosure="minimal"))
    asyncio.run(user.start(task))
    reply = asyncio.run(user.respond([AssistantMessage(content="What is your user id?")])).content
    assert "don't know my user id" in reply and task.user_scenario.facts["email"] in reply
    assert task.user_scenario.facts["user_id"] not in reply


def test_a_plan_s_arguments_ask_the_user_nothing():
    task = next(t for t in mua_gym.get_domain("retail").tasks("test") if "zip" in t.user_scenario.facts
                and t.category == "modify_address")
    user = ScenarioUser()
    asyncio.run(user.start(task))
    plan = 'Here is what I will do: modify_pending_order_address with {"order_id": "#W1", "zip": "97205"}. Shall I?'
    reply = asyncio.run(user.respond([AssistantMessage(content=plan)])).content
    assert task.user_scenario.facts["zip"] not in reply


def test_the_check_hears_every_request_and_is_deterministic():
    airline = mua_gym.get_domain("airline")
    task = next(t for t in airline.tasks("test") if len(t.user_scenario.intents) == 3)
    said = user_disclosures(task)
    assert said == user_disclosures(task) and len(said) == 5  # the opening, two more requests, the answers twice
    assert all(any(i["says"] in s for s in said) for i in task.user_scenario.intents)
    assert task.user_scenario.facts["user_id"] in said[-1]


def test_check_task_says_why_a_task_is_rejected():
    from mua_gym.task import Action
    from mua_gym.kit.generation import check_task

    retail = mua_gym.get_domain("retail")
    task = next(t for t in retail.tasks("test") if t.category == "cancel")
    assert check_task(retail, task) is None
    broken = task.model_copy(update={"gold_actions": [*task.gold_actions[:-1], Action(
        name="cancel_pending_order", arguments={"order_id": "#W0000000", "reason": "no longer needed"})]})
    assert check_task(retail, broken) == ("failed", ["a gold call failed: Error: Order not found"])
    assert check_task(retail, _silent_about_the_order(task))[0] == "unfair"


def test_fair_episodes_are_deterministic():
    task = next(t for t in mua_gym.get_domain("airline").tasks("test") if len(t.user_scenario.intents) == 3)
    transcripts = []
    for _ in range(2):
        env = MuaEnv("airline", user="scenario", split="test")
        run(env, task, FairAgent(task))
        transcripts.append(env.trajectory().to_json_line())
    assert transcripts[0] == transcripts[1]


def test_checker_flags_an_answer_the_agent_was_never_shown():
    retail = mua_gym.get_domain("retail")
    task = next(t for t in retail.tasks("test") if t.category == "information")
    results = prepare_task(retail, task).gold_results
    assert unfair_values(retail, task, results) == []
    evaluation = task.evaluation.model_copy(update={"communicate_info": ["98765.43"]})
    wrong = task.model_copy(update={"evaluation": evaluation})
    assert unfair_values(retail, wrong, results) == ["communicate='98765.43'"]
    env = MuaEnv("retail", user="scenario", split="test")
    agent = FairAgent(wrong)
    reward, *_ = run(env, wrong, agent)
    assert reward == 0.0 and agent.gave_up == ["communicate='98765.43'"]
