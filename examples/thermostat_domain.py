"""A dual-control domain of one's own: a smart thermostat, whose user acts on it when the agent asks in words.

The agent works at a heating company's support desk (it can find an account and resume its heating schedule); the
customer has the thermostat (they can read it, switch its eco mode and heating, and pick its program). A task
needs both: the agent's write on the account and the customer's own change on the device. The domain declares
what its customer understands in words (``Domain(user_vocabulary=...)``), so the built-in scenario user follows
"please turn off eco mode" as it follows telecom's "turn off airplane mode", and the blind baselines and the
fuzzer say this domain's requests, not the phone's.

    python examples/thermostat_domain.py

registers the domain (``mua/Thermostat-v0``) and plays its test task four ways: an agent that asks in words, the
oracle, an agent that skips the customer's part, and a blind agent that asks for everything. Only the first two
are paid.
"""

from __future__ import annotations

from sqlalchemy import Connection, MetaData, bindparam, insert, select, update
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from mua_gym import Action, Domain, EvaluationSpec, Task, ToolError, UserScenario, World, tool
from mua_gym.domain import Choice, Setting, UserVocabulary


class Base(DeclarativeBase):
    metadata = MetaData()


class Account(Base):
    __tablename__ = "accounts"
    account_id: Mapped[str] = mapped_column(primary_key=True)
    email: Mapped[str]
    name: Mapped[str]
    schedule: Mapped[str]  # active | paused


class Thermostat(Base):
    """The customer's device: only the customer's own tools touch it."""

    __tablename__ = "thermostats"
    account_id: Mapped[str] = mapped_column(primary_key=True)
    heating: Mapped[bool]
    eco: Mapped[bool]
    program: Mapped[str]  # comfort | night | frost


accounts, thermostats = Account.__table__, Thermostat.__table__
P = bindparam
BY_EMAIL = select(accounts).where(accounts.c.email == P("email"))
SCHEDULE = select(accounts.c.schedule).where(accounts.c.account_id == P("account_id"))
RESUME = update(accounts).where(accounts.c.account_id == P("account_id")).values(schedule="active")
DEVICE = select(thermostats)
SET_DEVICE = update(thermostats).values(heating=P("v_heating"), eco=P("v_eco"), program=P("v_program"))
PROGRAMS = ("comfort", "night", "frost")


# -- the agent's tools: the account ------------------------------------------------------------------------------
@tool(kind="read")
def find_account(world: World, email: str) -> dict:
    """Find a customer's account by email.

    Args:
        email: The customer's email address.
    """
    found = world.fetch_one(BY_EMAIL, email=email)
    if found is None:
        raise ToolError(f"no account with email {email!r}")
    return found


@tool(kind="write")
def resume_schedule(world: World, account_id: str) -> dict:
    """Resume an account's paused heating schedule.

    Args:
        account_id: The account id, such as 'A100'.
    """
    status = world.fetch_scalar(SCHEDULE, account_id=account_id)
    if status is None:
        raise ToolError(f"no account {account_id}")
    if status != "paused":
        raise ToolError(f"the schedule of {account_id} is {status}, not paused")
    world.execute(RESUME, account_id=account_id)
    return {"account_id": account_id, "schedule": "active"}


# -- the customer's tools: the thermostat on their wall ----------------------------------------------------------
def _device(world: World) -> dict:
    found = world.fetch_one(DEVICE)
    if found is None:
        raise ToolError("no thermostat in this home")
    return found


def _save(world: World, device: dict, **changes: object) -> None:
    """Writes ``device`` back with ``changes`` (heating, eco, program)."""
    state = {**device, **changes}
    world.execute(SET_DEVICE, v_heating=state["heating"], v_eco=state["eco"], v_program=state["program"])


def _on(value: bool) -> str:
    return "ON" if value else "OFF"


@tool(kind="read")
def check_thermostat(world: World) -> str:
    """Read your thermostat's display (you, the customer, look at it yourself)."""
    device = _device(world)
    return (f"Heating: {_on(device['heating'])}. Eco mode: {_on(device['eco'])}. Program: {device['program']}. "
            "Room: 14.5 C.")


@tool(kind="write")
def toggle_eco_mode(world: World) -> str:
    """Switch your thermostat's eco mode on or off."""
    device = _device(world)
    _save(world, device, eco=not device["eco"])
    return f"Eco mode is now {_on(not device['eco'])}."


@tool(kind="write")
def toggle_heating(world: World) -> str:
    """Switch your thermostat's heating on or off."""
    device = _device(world)
    _save(world, device, heating=not device["heating"])
    return f"Heating is now {_on(not device['heating'])}."


@tool(kind="write")
def set_program(world: World, program: str) -> str:
    """Choose your thermostat's program.

    Args:
        program: One of 'comfort', 'night' or 'frost'.
    """
    if program not in PROGRAMS:
        raise ToolError(f"no program {program!r}; the thermostat has {', '.join(PROGRAMS)}")
    _save(world, _device(world), program=program)
    return f"Program is now {program}."


@tool(kind="write")
def break_thermostat(world: World, eco: bool = False, program: str = "comfort") -> str:
    """Sets the fault a task starts from (a task's initial actions only: it is a setup tool)."""
    _save(world, _device(world), eco=eco, program=program)
    return "ok"


# -- what the customer understands in words ----------------------------------------------------------------------
VOCABULARY = UserVocabulary((
    Setting("eco", r"\beco(?: mode)?\b", "check_thermostat",
            ("turn off eco mode", "turn eco mode on", "toggle eco mode", "check whether eco mode is on"),
            toggle="toggle_eco_mode", state=r"eco mode: (on|off)"),
    Setting("heating", r"\bheating\b(?! schedule)|\bboiler\b", "check_thermostat",
            ("turn the heating on", "switch your heating off", "check whether the heating is on"),
            toggle="toggle_heating", state=r"heating: (on|off)"),
    Setting("program", r"\bprogram\b|\bcomfort\b|\bfrost\b|\bnight mode\b", "check_thermostat",
            ("set your thermostat program to comfort", "check your thermostat program"),
            verbs=r"\b(?:set|change|switch|select|choose|put)\b", action="set_program",
            choices=(Choice("program", (("comfort", r"\bcomfort\b"), ("night", r"\bnight\b"),
                                        ("frost", r"\bfrost\b")), question="Which program should I choose?"),)),
    Setting("display", r"\bdisplay\b|\bscreen\b|\broom temperature\b", "check_thermostat",
            ("check what your thermostat display shows", "tell me the room temperature")),
))


# -- the world and its tasks -------------------------------------------------------------------------------------
def build_world(conn: Connection, *, seed: int = 0) -> None:
    conn.execute(insert(accounts), [
        {"account_id": "A100", "email": "kim@example.com", "name": "Kim Lee", "schedule": "paused"},
        {"account_id": "A200", "email": "sam@example.com", "name": "Sam Roy", "schedule": "active"}])
    conn.execute(insert(thermostats), [{"account_id": "A100", "heating": True, "eco": False, "program": "comfort"}])


def _task(split: str, fault: dict, fix: Action, says: str) -> Task:
    """A cold house: the account's schedule is paused (the agent resumes it) and the thermostat has ``fault``
    (the customer makes ``fix`` when asked)."""
    return Task(
        id=f"thermostat-{split}", domain="thermostat", split=split,
        user_scenario=UserScenario(
            facts={"email": "kim@example.com", "name": "Kim Lee"},
            intents=[{"category": "cold_house", "says": says, "account_id": "A100"}]),
        initial_actions=[Action(name="break_thermostat", arguments=fault, requestor="setup")],
        gold_actions=[Action(name="find_account", arguments={"email": "kim@example.com"}),
                      Action(name="check_thermostat", arguments={}, requestor="user"), fix,
                      Action(name="resume_schedule", arguments={"account_id": "A100"})],
        evaluation=EvaluationSpec(reward_basis=["DB"]))


def thermostat_tasks(domain: Domain, split: str) -> list[Task]:
    tasks = [
        _task("train", {"program": "frost"}, Action(name="set_program", arguments={"program": "comfort"},
                                                    requestor="user"),
              "My house is cold and the thermostat says frost."),
        _task("test", {"eco": True}, Action(name="toggle_eco_mode", arguments={}, requestor="user"),
              "My house is freezing: the heating hardly comes on any more."),
    ]
    return [t for t in tasks if t.split == split]


DOMAIN = Domain(
    name="thermostat",
    metadata=Base.metadata,
    tools=[find_account, resume_schedule],
    user_tools=[check_thermostat, toggle_eco_mode, toggle_heating, set_program],
    setup_tools=[break_thermostat],
    policy="You are the support desk of a smart-heating company. Find the customer's account by email. You cannot "
           "reach their thermostat: ask them to read it and to change its settings themselves, one step at a time. "
           "State what you will change on an account and get the customer's yes first.",
    worlds=build_world,
    task_sources=thermostat_tasks,
    dual_control=True,
    user_vocabulary=VOCABULARY,
    description="Smart-heating support: the company's accounts on one side, the customer's thermostat on the other.",
)

#: An agent that asks the customer in words, as a person would: what the scenario user follows with VOCABULARY.
IN_WORDS = [
    {"name": "find_account", "arguments": {"email": "kim@example.com"}},
    "Could you check what your thermostat display shows?",
    "I see. Please turn off eco mode.",
    "I will resume the heating schedule on account A100. Shall I proceed?",
    {"name": "resume_schedule", "arguments": {"account_id": "A100"}},
    "Your heating schedule is running again. Is there anything else I can help you with?",
]


def play(env, agent) -> float:
    """One episode of the test task with ``agent`` (``act(observation)``, or a list of actions said in turn); its
    reward."""
    task = env.unwrapped.tasks("test")[0]
    observation, info = env.reset(options={"task": task})
    turns = iter(agent) if isinstance(agent, list) else None
    if turns is None:
        agent.reset(info)
    while True:
        action = next(turns, "Goodbye.") if turns is not None else agent.act(observation)
        observation, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return reward


def main() -> None:
    import mua_gym
    from mua_gym.eval.agents import OracleAgent
    from mua_gym.eval.baselines import requests_agent

    env = mua_gym.make(mua_gym.register_domain(DOMAIN))  # the scenario user plays: the domain is dual control
    task = env.unwrapped.tasks("test")[0]
    print("asked in words:", play(env, IN_WORDS))
    print("oracle:", play(env, OracleAgent(task)))
    print("agent's part only:", play(env, [a for a in IN_WORDS if "eco" not in str(a)]))
    print("blind requests:", play(env, requests_agent()))


if __name__ == "__main__":
    main()
