"""The scenario user on TAU2's own tasks: it reads their prose scenarios (identity, ids, the reason for calling in
the first person), never reads its instructions aloud, never says a value its scenario or the agent did not, and
refuses, naming the task and why, the tasks whose instructions hang on the conversation. The fair agent solves the
playable tasks whose gold values it can be shown."""

import re

import pytest

from mua_gym import MuaEnv, Task
from mua_gym.domain import tau2
from mua_gym.eval.agents import FairAgent, OracleAgent
from mua_gym.env.episode import prepare_task
from mua_gym.kit.fairness import unfair_values
from mua_gym.task import UserScenario
from mua_gym.user_sims import ScenarioUser
from mua_gym.user_sims.base import run_immediate
from mua_gym.user_sims.tau2_scenario import first_person, playable, read_scenario, refusals, sentences

DOMAINS = ("retail", "airline", "telecom")

#: What only an instruction to the user says: never in what the user says.
INSTRUCTION_MARKERS = re.compile(r"\bthe agent\b|\bif asked\b|\bwhen asked\b|\byou (?:want|are|prefer|do not|don't|"
                                 r"have|wish|need|just|also)\b|\byour\b|\breveal\b|\binstruction", re.IGNORECASE)
#: A value the user may say: an id, number, email or code (a token with a digit, or an email).
VALUE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|[#\w-]*\d[#\w.-]*")


def _tau2_or_skip():
    try:
        for domain in DOMAINS:
            tau2.data_dir(domain)
    except tau2.Tau2NotFound as exc:  # pragma: no cover - CI installs tau2
        pytest.skip(f"TAU2 is not installed: {exc}")


def _scenario_text(task: Task) -> str:
    s = task.user_scenario
    return "\n".join(t or "" for t in (s.known_info, s.reason_for_call, s.unknown_info, s.instructions)).lower()


def _play(env, task, agent):
    """(parity reward, the user's texts, what the user may quote: the agent's texts and its own tools' results)."""
    obs, info = env.reset(options={"task": task})
    agent.reset(info)
    while True:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs))
        if terminated or truncated:
            break
    said, heard = [], []
    for entry in env.unwrapped.trajectory().entries:
        m = entry.message
        if m.role == "user" and m.content:
            said.append(m.content)
        elif m.role == "assistant" and m.content or m.role == "tool" and getattr(m, "requestor", "") == "user":
            heard.append(m.content)
    return info["reward_info"]["parity_reward"], said, heard


@pytest.fixture(scope="module")
def played():
    """Every playable TAU2 test task of each domain, played once by the fair and once by the oracle agent:
    {domain: [(task, fair parity reward, oracle parity reward, user texts, heard texts)]}."""
    _tau2_or_skip()
    out = {}
    for domain in DOMAINS:
        env = MuaEnv(domain, world="tau2", user="scenario", split="test")
        rows = []
        for task in env.core.tasks("test"):
            if playable(task) is not None:
                continue
            fair, said, heard = _play(env, task, FairAgent(task))
            oracle, said_to_oracle, heard_oracle = _play(env, task, OracleAgent(task))
            rows.append((task, fair, oracle, said + said_to_oracle, heard + heard_oracle))
        out[domain] = rows
    return out


def test_first_person_turns_the_instructions_voice_into_the_users():
    assert first_person("You want to return your lamp.") == "I want to return my lamp."
    assert first_person("You are Ana and you were told to wait.") == "I am Ana and I was told to wait."
    assert first_person("Ask them to help you with yourself.") == "Ask them to help me with myself."
    assert first_person("You laptop screen is cracked.") == "My laptop screen is cracked."
    assert first_person("The kettle you received was broken; you're upset.") == \
        "The kettle I received was broken; I'm upset."
    assert sentences("One. Two?\nThree: go\n- a\n- b") == ["One.", "Two?", "Three: go - a - b"]


def test_reader_on_real_tasks_finds_identity_and_ids_in_the_scenario():
    _tau2_or_skip()
    counts = {}
    for domain in DOMAINS:
        for task in tau2.load_tasks(domain, "train") + tau2.load_tasks(domain, "test"):
            reading, text = read_scenario(task), _scenario_text(task)
            known = (task.user_scenario.known_info or "").lower()
            for key in ("user_id", "email", "zip", "phone_number", "home_address"):
                for value in str(reading.facts.get(key, "")).split(" and " if key == "email" else " or "):
                    assert value.lower() in text, (task.id, key, value)
            if "first_name" in reading.facts:  # read off the scenario or its user id
                assert reading.facts["first_name"].lower() in text and reading.facts["last_name"].lower() in text
            for key, values in reading.requests.items():
                for value in values if key != "passengers" else [p["dob"] for g in values for p in g]:
                    bare = str(value).lstrip("#").lower().removeprefix("my ").removeprefix("the ")
                    assert bare in text or key == "refuel_gb", (task.id, key, value)
            assert not INSTRUCTION_MARKERS.search(reading.opening), (task.id, reading.opening)
            if "user id is" in known:
                assert reading.facts.get("user_id"), task.id
            if "zip" in known:
                assert reading.facts.get("zip") and reading.facts.get("first_name"), task.id
            counts[domain] = counts.get(domain, 0) + (reading.refusal is None)
    assert all(counts.values()), counts
    phone = read_scenario(tau2.load_tasks("telecom", "test")[0]).facts
    assert phone["phone_number"] and phone["name"] and phone["location"]


def test_a_task_that_hangs_on_the_conversation_is_refused_with_its_reason():
    _tau2_or_skip()
    for domain in DOMAINS:
        tasks = tau2.load_tasks(domain, "test")
        refused = refusals(tasks)
        assert (domain == "telecom") == (not refused), domain  # telecom's instructions are behaviours it has
        for task_id, why in refused.items():
            assert f"task {task_id!r} ({domain})" in why and "only a language-model user can follow" in why
    task = next(t for t in tau2.load_tasks("retail", "test") if playable(t) is not None)
    with pytest.raises(ValueError, match=rf"cannot play task {task.id!r} \(retail\): .*agent"):
        run_immediate(ScenarioUser().start(task))
    assert ScenarioUser.refuses(task) == playable(task)
    env = MuaEnv("retail", world="tau2", user="scenario", split="test")
    obs, info = env.reset(options={"task": task})
    assert "cannot play task" in info["user_error"]  # the episode is void, not scored as played
    mine = [Task(id="own", domain="retail", user_scenario=UserScenario(
        known_info="You are Ana Lima in zip code 12345.", reason_for_call=reason)) for reason in (
        "You want to cancel order #W1234567. If the agent asks for confirmation, change your mind.",
        "You want to cancel order #W1234567. If not, return it instead.",
        "You want to cancel order #W1234567. Insist on a refund.",
        "You want to cancel order #W1234567. If multiple colors are available, you prefer red.")]
    assert [playable(t) is None for t in mine] == [False, False, False, True]
    reply = run_immediate(ScenarioUser().start(mine[3])).content
    assert reply == ("Hi! I'm Ana Lima, zip code 12345. I want to cancel order #W1234567. "
                     "If multiple colors are available, I prefer red.")


def test_the_user_answers_plain_questions_from_its_scenario_only():
    _tau2_or_skip()
    task = Task(id="own", domain="airline", user_scenario=UserScenario(
        known_info="Your name is Ana Lima. Your user id is ana_lima_1234.",
        reason_for_call="You want to cancel reservation AB12CD.",
        instructions="You pay with your credit card ending in 9876. You travel with Rui Lima, DOB 1990-01-02."))
    user = ScenarioUser()
    run_immediate(user.start(task))
    ask = [None]

    def answer(text):
        from mua_gym.messages import AssistantMessage

        ask[0] = AssistantMessage(content=text)
        return run_immediate(user.respond([ask[0]])).content

    assert answer("What is your user id?") == "My user id is ana_lima_1234."
    assert answer("What is the reservation number?") == "It's reservation AB12CD."
    assert answer("Which payment method would you like to use?") == "Please use my credit card ending in 9876."
    assert answer("What are the passengers' names and dates of birth?") == \
        "The passengers are Rui Lima, born 1990-01-02."
    assert answer("What is your email address?") == "My user id is ana_lima_1234."  # none given: what it has
    assert answer("Tell me everything.") == "Thank you."  # a vague ask volunteers nothing
    assert answer("I will cancel_reservation AB12CD. Shall I proceed?") == "Yes, please go ahead."


def test_no_instruction_is_spoken_and_no_value_invented_over_whole_test_splits(played):
    for domain, rows in played.items():
        for task, _, _, said, heard in rows:
            source = _scenario_text(task) + "\n" + "\n".join(heard).lower()
            for text in said:
                assert not INSTRUCTION_MARKERS.search(text), (domain, task.id, text)
                for value in VALUE.findall(text):
                    bare = value.lower().strip(".,;:-#")
                    assert bare in source, (domain, task.id, value, text)


def test_fair_agent_solves_the_playable_tasks_it_can_be_shown_and_the_oracle_all(played):
    for domain, rows in played.items():
        assert rows, domain
        assert all(oracle == 1.0 for _, _, oracle, _, _ in rows), domain
        dom = MuaEnv(domain, world="tau2", user="scenario").core.domain
        shown = {t.id for t, *_ in rows if not unfair_values(dom, t, prepare_task(dom, t).gold_results)}
        solved = {t.id for t, fair, *_ in rows if fair == 1.0}
        # every playable task the fair agent fails holds a gold value no gold call shows (it plays gold calls only)
        assert shown <= solved, (domain, sorted(shown - solved))
        if shown:
            assert len(shown & solved) / len(shown) >= 0.9, domain


def test_the_scripted_opening_speaks_as_the_customer_and_keeps_instructions_to_itself():
    """A TAU2 task's script opens in the user's voice ("I want", not "You want"), with no sentence that only
    instructs the user, and with every value it says taken from the scenario."""
    _tau2_or_skip()
    for domain in DOMAINS:
        for task in tau2.load_tasks(domain, "test"):
            opening = task.script[0]
            assert opening.startswith("Hi. ") and not INSTRUCTION_MARKERS.search(opening), (task.id, opening)
            for value in VALUE.findall(opening):
                assert value.lower().strip(".,;:-#") in _scenario_text(task), (task.id, value)
