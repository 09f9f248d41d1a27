"""Users who do not say everything straight (mua_gym.kit.behaviours): the scenario user holds a fact back until it
is asked again or has said who it is, gives a wrong id first and corrects it, and changes its mind or declines when
asked to confirm; generated tasks carry these as data, every one of them stays fair, and an agent that does not
listen (acts on the first value, or on the plan before the change) is not paid."""

import json

import numpy as np
import pytest

import mua_gym
from mua_gym.eval.coverage import behaviours
from mua_gym import Task
from mua_gym.kit.behaviours import BEHAVIOURS, behaviour_instructions, change_mind, decline, give_wrong_first, withhold
from mua_gym.kit.generation import Intent, action, check_task, compose_task
from mua_gym.messages import AssistantMessage
from mua_gym.task import Persona
from mua_gym.user_sims import ScenarioUser
from mua_gym.user_sims.base import run_immediate

ORDER = "#W1234567"
CANCEL = Intent("cancel", f"Please cancel my order {ORDER}; I ordered it by mistake.",
                [action("get_order_details", order_id=ORDER),
                 action("cancel_pending_order", order_id=ORDER, reason="ordered by mistake")],
                facts={"order_id": ORDER, "reason": "ordered by mistake"})


def _task(*intents: Intent, disclosure: str = "minimal") -> Task:
    task = compose_task(task_id="t", domain="retail", split="test", world=mua_gym.Task(id="x", domain="r").world,
                        intents=list(intents), difficulty=2, user_id="mia_1", name="Mia Li", role="a customer",
                        auth=action("find_user_id_by_email", email="mia@example.com"),
                        auth_text="My email is mia@example.com.", auth_facts={"email": "mia@example.com"})
    scenario = task.user_scenario.model_copy(update={"persona": Persona(disclosure=disclosure)})
    return task.model_copy(update={"user_scenario": scenario})


def _talk(user: ScenarioUser, text: str) -> str:
    return run_immediate(user.respond([AssistantMessage(content=text)])).content


def _user(task: Task) -> tuple[ScenarioUser, str]:
    user = ScenarioUser()
    return user, run_immediate(user.start(task)).content


def test_a_fact_held_back_is_given_when_asked_again():
    user, opening = _user(_task(withhold(CANCEL, "order_id", "asked_twice")))
    assert ORDER not in opening and "cancel my order" in opening
    first = _talk(user, "Which order is it about? What is the order id?")
    assert ORDER not in first and "at hand" in first
    assert ORDER in _talk(user, "Could you tell me the order id?")


def test_a_fact_held_until_identified_needs_the_identity_first():
    user, _ = _user(_task(withhold(CANCEL, "order_id", "identified")))
    both = _talk(user, "What is your email address? And which order is it? What is the order id?")
    assert "mia@example.com" in both and ORDER not in both  # the same breath does not count
    assert ORDER in _talk(user, "Thanks. What is the order id?")
    # a user who opens with its identity is identified from the start
    user, opening = _user(_task(withhold(CANCEL, "order_id", "identified"), disclosure="normal"))
    assert "mia@example.com" in opening and ORDER in _talk(user, "What is the order id?")


def test_a_wrong_id_first_is_corrected_when_named_or_asked_again():
    wrong = "#W7654321"
    user, opening = _user(_task(give_wrong_first(CANCEL, "order_id", wrong)))
    assert ORDER not in opening and wrong not in opening
    assert wrong in _talk(user, "What is the order id?")
    fixed = _talk(user, f"I could not find order {wrong}; no such order exists.")
    assert ORDER in fixed and wrong not in fixed
    user, _ = _user(_task(give_wrong_first(CANCEL, "order_id", wrong)))
    assert wrong in _talk(user, "What is the order id?")
    assert ORDER in _talk(user, "Which order is it? Please check the order id again.")


def test_a_change_of_mind_comes_once_at_the_first_plan_and_then_the_new_plan_is_agreed():
    other = "#W2222222"
    instead = Intent("cancel", f"Cancel order {other} instead.", [action("cancel_pending_order", order_id=other,
                                                                         reason="no longer needed")],
                     facts={"order_id": other, "reason": "no longer needed"})
    changed = change_mind(CANCEL, instead, f"Actually, I've changed my mind: cancel {other} instead, it is no "
                                           "longer needed.")
    assert changed.gold == instead.gold and changed.says == CANCEL.says
    user, _ = _user(_task(changed))
    reply = _talk(user, f"I will cancel order {ORDER} (ordered by mistake). Shall I proceed?")
    assert reply.startswith("Actually") and other in reply
    assert _talk(user, f"I will cancel order {other} (no longer needed). Shall I proceed?").startswith("Yes")
    # the next episode starts from the request as first told
    run_immediate(user.start(_task(changed)))
    assert _talk(user, f"I will cancel order {ORDER}. Shall I proceed?").startswith("Actually")


def test_a_declined_request_is_refused_after_the_first_plan():
    declined = decline(CANCEL, "Actually, no: please leave that one as it is.", CANCEL.gold[:1])
    assert [a.name for a in declined.gold] == ["get_order_details"]
    user, _ = _user(_task(declined))
    assert _talk(user, f"I will cancel order {ORDER}. Shall I proceed?").startswith("Actually, no")
    assert _talk(user, f"I will cancel order {ORDER}. Shall I proceed?").startswith("No")


def test_a_plan_is_matched_to_the_request_it_names_most_of():
    card = "credit_card_1111111"
    first = Intent("modify_payment", f"Pay order {ORDER} with {card}.", [], facts={"order_id": ORDER,
                                                                                  "payment_method_id": card})
    other = "#W2222222"
    second = Intent("modify_payment", f"Pay order {other} with {card} too.", [],
                    facts={"order_id": other, "payment_method_id": card})
    user, _ = _user(_task(decline(first, "Actually, no: leave that one.", []), second))
    assert _talk(user, f"I will change order {other} to {card}. Shall I proceed?").startswith("Yes")


def test_the_behaviours_are_told_to_a_language_model_user_with_the_right_values():
    wrong = "#W7654321"
    text = behaviour_instructions(give_wrong_first(CANCEL, "order_id", wrong).behaviour, CANCEL.facts)
    assert ORDER in text and wrong in text
    task = _task(withhold(CANCEL, "order_id", "asked_twice"))
    assert ORDER in task.user_scenario.instructions and "asked again" in task.user_scenario.instructions
    assert withhold(Intent("x", "no id here", [], facts={"order_id": ORDER}), "order_id", "asked_twice") is None


@pytest.fixture(scope="module", params=["retail", "airline"])
def split(request):
    domain = mua_gym.get_domain(request.param)
    return domain, domain.tasks("test")


def test_generated_splits_carry_every_behaviour_and_each_task_stays_verified(split):
    domain, tasks = split
    assert set().union(*map(behaviours, tasks)) == set(BEHAVIOURS)
    top = [t for t in tasks if t.difficulty == max(x.difficulty for x in tasks)]
    conditional = [t for t in top if behaviours(t)]
    assert len(conditional) * 3 >= len(top)
    for task in conditional[:30]:
        assert check_task(domain, task) is None, task.id


def _play(domain_name: str, task: Task, calls: list) -> float:
    """The reward of an agent that makes ``calls`` (name, arguments) in turn, tells every value the task asks told,
    then asks "anything else?" until the user stops."""
    env = mua_gym.make(mua_gym.env_id(domain_name), user="scenario", tasks=[task])
    env.reset(options={"task_id": task.id})
    reward, done = 0.0, False
    for n, (name, arguments) in enumerate(calls):
        _, reward, terminated, truncated, _ = env.step({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]})
        done = terminated or truncated
    told = " ".join(task.evaluation.communicate_info)
    for text in [f"Done. {told}"] + ["Is there anything else I can help you with?"] * 20:
        if done:
            break
        _, reward, terminated, truncated, _ = env.step(text)
        done = terminated or truncated
    return reward


def test_an_agent_that_acts_on_the_wrong_value_first_given_is_not_paid(split):
    domain, tasks = split
    tried = 0
    for task in tasks:
        wrong = [(i[k], v) for i in task.user_scenario.intents for k, v in (i.get("first_says") or {}).items()]
        if not wrong:
            continue
        right, value = wrong[0]
        gold = [(a.name, a.arguments) for a in task.gold_actions if a.requestor == "assistant"]
        assert _play(domain.name, task, gold) == 1.0, task.id  # the gold itself is paid, played this way
        hasty = [(name, {k: (value if v == right else v) for k, v in arguments.items()}) for name, arguments in gold]
        assert _play(domain.name, task, hasty) == 0.0, task.id
        tried += 1
        if tried == 5:
            break
    assert tried == 5


def test_an_agent_that_carries_out_the_plan_before_the_change_is_not_paid():
    from mua_gym.domains.retail import taskgen
    from mua_gym.kit.maker import generated_world, read_world

    domain = mua_gym.get_domain("retail")
    world = generated_world(0)
    snap = read_world(domain, world, taskgen.Snapshot)
    checked = 0
    for index in range(60):
        maker = taskgen._Maker(snap, np.random.default_rng(index), snap.users[index])
        first = maker.return_() or maker.modify_address()
        other = maker.instead(first) if first is not None else None
        if other is None:
            continue
        auth, text, facts = taskgen._auth(maker)
        task = compose_task(task_id=f"c{index}", domain="retail", split="test", world=world,
                            intents=[change_mind(first, *other)], difficulty=2, user_id=maker.user["user_id"],
                            name="A B", role="a customer", auth=auth, auth_text=text, auth_facts=facts)
        assert check_task(domain, task) is None
        before = [(a.name, a.arguments) for a in [auth, *first.gold]]
        assert _play("retail", task, before) == 0.0, task.id
        checked += 1
    assert checked >= 5


def test_a_generated_user_that_waits_for_identification_does_not_open_with_its_identity(split):
    domain, tasks = split
    guarded = [t for t in tasks if any("identified" in (i.get("withhold") or {}).values()
                                       for i in t.user_scenario.intents)]
    assert guarded
    for task in guarded[:5]:
        assert task.user_scenario.persona.disclosure == "minimal"
        user, opening = _user(task)
        identity = user._identity()
        assert identity and identity not in opening
