"""Reward modes (``AsyncMuaEnv(reward=...)``): the oracle earns 1.0 in each, no blind agent is paid in any, each
shaping term moves the reward the way its contract says, and success stays readable as ``task_reward``."""

import asyncio
import itertools
import json
import re

import pytest

import mua_gym
from mua_gym import MuaEnv
from mua_gym.eval.agents import Agent, OracleAgent
from mua_gym.eval.baselines import BLIND_AGENTS, CLOSING
from mua_gym.user_sims import UserSimulator
from mua_gym.env.episode import prepare_task
from mua_gym.env.reward import (
    BUDGET_PER_GOLD_CALL, EFFICIENCY_FLOOR, INVALID_CALL_PENALTY, PARTIAL_FAILURE_SCALE, REWARD_BASES, REWARD_TERMS,
    SUCCESS_FLOOR, RewardInfo, reward_mode, shape,
)

from episodes import run, run_oracle

#: Every mode there is: each base with each subset of the shaping terms.
ALL_MODES = ["+".join((base, *terms)) for base in REWARD_BASES
             for n in range(len(REWARD_TERMS) + 1) for terms in itertools.combinations(REWARD_TERMS, n)]
_ENVS: dict = {}


def _env(domain: str, mode: str, **kwargs) -> MuaEnv:
    key = (domain, mode, tuple(sorted(kwargs.items())))
    if key not in _ENVS:
        _ENVS[key] = MuaEnv(domain, split="test", reward=mode, **kwargs)
    return _ENVS[key]


def _call(name: str, call_id: str, **arguments) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


class LookupsAgent(Agent):
    """Blind, but busy: ``per_turn`` well-formed read-only calls that always run cleanly, for ``turns`` turns, then
    the ``mixed`` blind script. It never reads the task: a validity bonus would pay it for every call."""

    def __init__(self, listing: str, turns: int = 4, per_turn: int = 3) -> None:
        self.listing, self.turns, self.per_turn = listing, turns, per_turn
        self.reset({})

    def reset(self, info: dict) -> None:
        self._turn, self._talk = 0, BLIND_AGENTS["mixed"]()

    def act(self, observation: list) -> dict | str:
        self._turn += 1
        if self._turn > self.turns:
            return self._talk.act(observation)
        calls = [_call(self.listing, f"l{self._turn}_{i}") if i % 2 == 0 else
                 _call("calculate", f"l{self._turn}_{i}", expression="2 + 2") for i in range(self.per_turn)]
        return {"role": "assistant", "content": None, "tool_calls": calls}


class MalformedAgent(Agent):
    """Blind and broken: a stream of unreadable or failing calls (bad JSON, unknown tools, missing arguments)."""

    SAID = ('<tool_call>{"name": "get_order", "arguments": {</tool_call>',
            {"name": "no_such_tool", "arguments": {}},
            {"name": "get_order", "arguments": {}},
            "<tool_call>not json at all</tool_call>")

    def reset(self, info: dict) -> None:
        self._said = 0

    def act(self, observation: list) -> dict | str:
        self._said += 1
        return self.SAID[self._said % len(self.SAID)]


_PHONE = re.compile(r"\b\d{3}-\d{3}-\d{4}\b")
#: The shotgun's writes, always the same whatever the user asked: telecom's account fixes with guessed arguments.
_SHOTGUN = (("refuel_data", {"gb_amount": 1.0}), ("enable_roaming", {}), ("resume_line", {}))


class ShotgunAgent(Agent):
    """Blind to the request, but it finds the caller's line (asks for the phone number, looks up the customer and
    their lines), then always tops the line up by 1 GB, turns roaming on and resumes it, then says goodbye. Each
    write hits a gold row of some tasks; a partial credit that counts hits and ignores misses would pay it."""

    def reset(self, info: dict) -> None:
        self._step, self._customer, self._lines, self._line, self._phone = "ask", None, [], None, None

    @staticmethod
    def _last_tool(observation: list) -> dict:
        for m in reversed(observation):
            if m.get("role") == "tool":
                try:
                    out = json.loads(m.get("content") or "")
                except ValueError:
                    return {}
                return out if isinstance(out, dict) else {}
        return {}

    def act(self, observation: list) -> dict | str:
        if self._phone is None:
            said = " ".join(m.get("content") or "" for m in observation if m.get("role") == "user")
            found = _PHONE.search(said)
            if not found:
                return "Could you tell me the phone number of your line, please?"
            self._phone = found.group(0)
            return {"name": "get_customer_by_phone", "arguments": {"phone_number": self._phone}}
        if self._customer is None:
            record = self._last_tool(observation)
            self._customer = record.get("customer_id", "")
            self._lines = list(record.get("line_ids") or [])
        if self._line is None:
            record = self._last_tool(observation)
            if record.get("phone_number") == self._phone and record.get("line_id"):
                self._line, self._writes = record["line_id"], list(_SHOTGUN)
            elif self._lines:
                return {"name": "get_details_by_id", "arguments": {"id": self._lines.pop(0)}}
            else:
                self._line, self._writes = "", []
        if self._writes:
            name, extra = self._writes.pop(0)
            return {"name": name, "arguments": {"customer_id": self._customer, "line_id": self._line, **extra}}
        return "All done on your line. " + CLOSING


def test_every_mode_is_named_and_parsed_to_one_canonical_name():
    assert len(ALL_MODES) == 8 and len({reward_mode(m).name for m in ALL_MODES}) == 8
    assert reward_mode("efficiency+partial").name == "partial+efficiency"
    assert reward_mode(" validity + task ").name == "task+validity"
    assert reward_mode("validity").name == "task+validity"  # no base: the task reward's
    assert reward_mode("task") == reward_mode("task") and reward_mode("task").name == "task"


@pytest.mark.parametrize("bad", ["tasks", "partial+task", "validity+validity", "", "partial+", "task,validity",
                                 "Partial", 3, None])
def test_a_bad_mode_name_raises_one_line_naming_the_valid_modes(bad):
    with pytest.raises(ValueError) as caught:
        MuaEnv("mock", reward=bad)
    message = str(caught.value)
    assert "\n" not in message and all(name in message for name in (*REWARD_BASES, *REWARD_TERMS))


@pytest.mark.parametrize("domain", ["mock", "retail"])
def test_the_oracle_earns_one_in_every_mode(domain):
    tasks = _env(domain, "task").core.tasks("test")[:40]
    assert tasks
    for mode in ALL_MODES:
        env = _env(domain, mode)
        for task in tasks:
            reward, terminated, truncated, info = run_oracle(env, task)
            ri = info["reward_info"]
            assert (reward, terminated, truncated) == (1.0, True, False), (mode, task.id, ri)
            assert ri["task_reward"] == ri["shaped_reward"] == ri["reward"] == 1.0
            assert ri["reward_mode"] == reward_mode(mode).name
            trajectory = env.core.trajectory()
            assert trajectory.reward == trajectory.task_reward == 1.0


def _blind_agents(domain: str) -> dict:
    listing = {"mock": "list_products", "retail": "list_all_product_types"}.get(domain)
    # telecom: only the scripts that ask the user for things (the others are held to every domain elsewhere)
    talkers = ("mixed", "requests") if domain == "telecom" else tuple(BLIND_AGENTS)
    agents = {name: BLIND_AGENTS[name] for name in talkers}
    agents["malformed"] = MalformedAgent
    if listing:
        agents["lookups"] = lambda: LookupsAgent(listing)
    return agents


@pytest.mark.parametrize("domain, count", [("mock", None), ("retail", 20), ("telecom", 15)])
def test_no_blind_agent_is_paid_in_any_mode(domain, count):
    """Telecom is the trap: its user runs their own tools when asked, and a script that asks for everything makes
    the user reproduce gold rows. Those rows are the user's, so no mode's partial credit counts them."""
    tasks = _env(domain, "task").core.tasks("test")[:count]
    for name, make in _blind_agents(domain).items():
        for mode in ALL_MODES:
            env = _env(domain, mode)
            for task in tasks:
                reward, _, truncated, info = run(env, task, make())
                assert reward == 0.0, (name, mode, task.id, info.get("reward_info"))
                assert reward <= (info.get("reward_info") or {}).get("task_reward", 0.0)
                if not truncated:
                    assert env.core.trajectory().task_reward == 0.0


def test_the_users_own_rows_earn_the_agent_no_partial_credit():
    """Over the whole telecom test split: the scripts that ask for every phone fix get nothing in partial mode."""
    env = _env("telecom", "partial")
    tasks = env.core.tasks("test")
    dual = [t for t in tasks if prepare_task(env.domain, t).user_rows]
    assert len(dual) > len(tasks) // 2
    for script in ("mixed", "requests"):
        for task in tasks:
            reward, _, _, info = run(env, task, BLIND_AGENTS[script]())
            assert reward == 0.0, (script, task.id, info.get("reward_info"))


def _run_calls(env: MuaEnv, task_id: str, turns: list) -> tuple[float, dict]:
    """Plays ``turns`` (actions), then says goodbye until the episode ends; the final (reward, info)."""
    env.reset(options={"task_id": task_id})
    for i, action in enumerate(turns):
        *_, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            assert i == len(turns) - 1, info  # only the last turn may end it (a terminal tool)
            return reward, info
    while True:
        *_, reward, terminated, truncated, info = env.step("Thank you, that is all done. " + CLOSING)
        if terminated or truncated:
            return reward, info


def _gold_turns(task) -> list:
    return [{"name": a.name, "arguments": a.arguments} for a in task.gold_actions]


def test_efficiency_scales_down_a_success_with_many_extra_calls_and_never_pays_a_failure():
    base = _env("mock", "task")
    task = next(t for t in base.core.tasks("test") if t.id == "mock-place-order-gift")
    assert len(task.gold_actions) == 3
    budget = BUDGET_PER_GOLD_CALL * len(task.gold_actions)
    padding = [{"role": "assistant", "content": None, "tool_calls": [_call("list_products", f"p{i}_{j}")
                                                                     for j in range(3)]} for i in range(3)]
    rewards = {}
    for mode in ("task", "task+efficiency", "partial+efficiency"):
        reward, info = _run_calls(_env("mock", mode), task.id, padding[:2] + _gold_turns(task))
        rewards[mode] = reward
        assert info["reward_info"]["task_reward"] == 1.0
    calls = 6 + len(task.gold_actions)
    assert rewards["task"] == 1.0
    assert SUCCESS_FLOOR < budget / calls < 1.0
    assert rewards["task+efficiency"] == rewards["partial+efficiency"] == pytest.approx(budget / calls)
    ri = info["reward_info"]
    factor = pytest.approx(budget / calls)
    assert ri["efficiency"] == {"calls": calls, "gold_calls": 3, "budget": budget, "factor": factor}
    # Twice as many calls again: the factor stops at its floor, so a success still earns what any failure can.
    reward, info = _run_calls(_env("mock", "task+efficiency"), task.id, padding * 3 + _gold_turns(task))
    assert reward == EFFICIENCY_FLOOR and info["reward_info"]["task_reward"] == 1.0
    # The same padding without the work: nothing, in every efficiency mode.
    for mode in ("task+efficiency", "partial+efficiency", "partial+validity+efficiency"):
        reward, info = _run_calls(_env("mock", mode), task.id, padding)
        assert reward == 0.0 and info["reward_info"]["task_reward"] == 0.0


def test_partial_with_validity_on_a_half_done_task():
    """mock-multi-intent wants a new email and order O1002 cancelled: the agent does the email and errs once."""
    half = [{"name": "update_email", "arguments": {"customer_id": "C001", "email": "ana.lopez@example.net"}},
            {"name": "get_order", "arguments": {"order_id": "O9999"}}]  # no such order: an erroring call
    results = {mode: _run_calls(MuaEnv("mock", reward=mode), "mock-multi-intent", half)
               for mode in ("task", "partial", "partial+validity", "task+validity")}
    ri = results["partial+validity"][1]["reward_info"]
    assert ri["task_reward"] == 0.0 and ri["gold_rows_changed"] == 4 and ri["rows_reproduced"] == 1
    assert ri["partial_credit"] == pytest.approx(0.25)
    assert results["partial"][0] == pytest.approx(PARTIAL_FAILURE_SCALE * 0.25) == ri["base_reward"]
    penalty = pytest.approx(INVALID_CALL_PENALTY)
    assert ri["validity"] == {"calls": 2, "invalid_calls": 1, "allowed": 0, "penalty": penalty}
    assert results["partial+validity"][0] == pytest.approx(PARTIAL_FAILURE_SCALE * 0.25 - INVALID_CALL_PENALTY)
    assert results["task"][0] == results["task+validity"][0] == 0.0  # floored: a failure never goes below 0
    # The same half without the error: validity takes nothing off.
    clean, info = _run_calls(MuaEnv("mock", reward="partial+validity"), "mock-multi-intent", half[:1])
    assert clean == pytest.approx(PARTIAL_FAILURE_SCALE * 0.25) and info["reward_info"]["validity"]["penalty"] == 0.0


def test_validity_lowers_a_success_reached_through_failing_calls():
    task_id = "mock-multi-intent"
    task = next(t for t in MuaEnv("mock").core.tasks() if t.id == task_id)
    errors = [{"name": "get_order", "arguments": {"order_id": "O9999"}}, "<tool_call>{oops</tool_call>"]
    reward, info = _run_calls(MuaEnv("mock", reward="task+validity"), task_id, errors + _gold_turns(task))
    ri = info["reward_info"]
    assert ri["task_reward"] == 1.0 and ri["validity"]["invalid_calls"] == 2
    assert reward == pytest.approx(1.0 - 2 * INVALID_CALL_PENALTY) == ri["shaped_reward"]


def test_reward_info_records_the_mode_the_task_reward_and_each_terms_inputs():
    env = MuaEnv("mock", reward="efficiency+validity+partial")
    task = env.core.tasks()[0]
    reward, _, _, info = run_oracle(env, task)
    ri = info["reward_info"]
    gold_calls = sum(a.requestor == "assistant" for a in task.gold_actions)
    assert ri["reward_mode"] == "partial+validity+efficiency"
    assert ri["task_reward"] == ri["base_reward"] == 1.0 and ri["shaped_reward"] == reward
    assert ri["validity"] == {"calls": info["tool_calls"], "invalid_calls": info["tool_errors"], "allowed": 0,
                              "penalty": 0.0}
    assert ri["efficiency"] == {"calls": info["tool_calls"], "gold_calls": gold_calls,
                                "budget": BUDGET_PER_GOLD_CALL * gold_calls, "factor": 1.0}
    trajectory = env.core.trajectory()
    again = mua_gym.Trajectory.from_json_line(trajectory.to_json_line())
    assert again.reward_info == ri and again.task_reward == 1.0
    plain = MuaEnv("mock")
    _, _, _, info = run_oracle(plain, task)
    assert info["reward_info"]["reward_mode"] == "task"
    assert info["reward_info"]["validity"] is None and info["reward_info"]["efficiency"] is None


def test_truncated_and_void_episodes_stay_at_zero_in_every_mode():
    half = {"name": "update_email", "arguments": {"customer_id": "C001", "email": "ana.lopez@example.net"}}
    for mode in ALL_MODES:
        env = MuaEnv("mock", reward=mode, max_turns=3)
        env.reset(options={"task_id": "mock-multi-intent"})
        env.step(half)
        assert asyncio.run(env.core.finish(score=False)) == 0.0 and env.core.trajectory().task_reward == 0.0
        env.reset(options={"task_id": "mock-multi-intent"})
        lookup = {"name": "list_products", "arguments": {}}
        for action in (half, lookup, lookup):  # tool turns only: the user never gets to stop it
            *_, reward, terminated, truncated, info = env.step(action)
        assert truncated and reward == 0.0 and env.core.trajectory().task_reward == 0.0
        assert env.finish() == 0.0
        # Cut short with half the work done: scored as the world stands, with the mode's shaping.
        env.reset(options={"task_id": "mock-multi-intent"})
        env.step(half)
        expected = PARTIAL_FAILURE_SCALE * 0.25 if mode.startswith("partial") else 0.0
        assert env.finish() == pytest.approx(expected) and env.core.trajectory().task_reward == 0.0


class FailingUser(UserSimulator):
    """A user simulator whose opening line fails: the episode is void."""

    name = "failing"

    async def start(self, task, *, seed=None, tools=None):
        raise RuntimeError("the simulator is down")

    async def respond(self, view):
        raise RuntimeError("the simulator is down")


def test_a_user_error_pays_nothing_in_any_mode():
    for mode in ALL_MODES:
        env = MuaEnv("mock", reward=mode, user=FailingUser())
        env.reset(options={"task_id": "mock-multi-intent"})
        *_, reward, terminated, truncated, info = env.step({"name": "list_products", "arguments": {}})
        assert (reward, terminated, truncated) == (0.0, False, True) and info["termination_reason"] == "user_error"


def _judged_task(task):
    data = task.model_dump(mode="json")
    data["evaluation"]["reward_basis"] = [*data["evaluation"]["reward_basis"], "NL_ASSERTION"]
    data["evaluation"]["nl_assertions"] = ["The agent was polite."]
    return type(task).model_validate(data)


@pytest.mark.parametrize("verdict", [True, False, "raises"])
def test_shaping_applies_on_top_of_the_judged_task_reward(verdict):
    async def judge(messages, assertions):
        if verdict == "raises":
            raise RuntimeError("judge down")
        return [verdict] * len(assertions)

    task = _judged_task(MuaEnv("mock").core.tasks()[0])
    for mode in ("task+efficiency", "partial+validity"):
        env = MuaEnv("mock", reward=mode, judge=judge)
        reward, _, _, info = run(env, task, OracleAgent(task))
        ri = info["reward_info"]
        assert ri["components"]["NL_ASSERTION"] == (1.0 if verdict is True else 0.0)
        assert ri["task_reward"] == ri["reward"] == (1.0 if verdict is True else 0.0)
        if verdict is True:
            assert reward == 1.0
        else:  # a failed judgement: the partial base pays the DB credit of a failure, and nothing else does
            assert reward == (PARTIAL_FAILURE_SCALE * ri["partial_credit"] if mode.startswith("partial") else 0.0)
        assert ("judge_error" in ri) == (verdict == "raises")


def test_same_seed_same_shaped_reward():
    def episode() -> dict:
        env = MuaEnv("retail", split="test", reward="partial+validity+efficiency")
        infos = []
        for seed in range(6):
            env.reset(seed=seed)
            task = env.core.task
            turns = _gold_turns(task)[:-1] + [{"name": "get_order_details", "arguments": {"order_id": "#W0"}}]
            for action in turns:
                *_, terminated, truncated, info = env.step(action)
                if terminated or truncated:
                    break
            env.finish()
            infos.append(env.core.trajectory().reward_info)
        return infos

    first, second = episode(), episode()
    assert first == second and any(info["shaped_reward"] > 0 for info in first)


def test_the_oracle_earns_one_in_every_mode_where_the_gold_itself_makes_a_failing_call():
    """Some TAU2 gold calls fail (a lookup the gold expects to miss): validity lets the gold's own errors go.
    (Tasks an idle agent's world meets are left out: strictly, only a judge pays those.)"""
    pytest.importorskip("tau2")
    env = MuaEnv("retail", world="tau2", split="test")
    tasks = [t for t in env.core.tasks("test") if any(r.error for r in prepare_task(env.domain, t).gold_results)
             and not prepare_task(env.domain, t).blind_paid]
    assert tasks
    for mode in ALL_MODES:
        shaped = MuaEnv("retail", world="tau2", split="test", reward=mode)
        for task in tasks:
            reward, _, _, info = run_oracle(shaped, task)
            assert reward == info["reward_info"]["task_reward"] == 1.0, (mode, task.id, info["reward_info"])


def _shotgun_tasks() -> list:
    env = _env("telecom", "task")
    return env.core.tasks("train")[:80] + env.core.tasks("test")


@pytest.mark.parametrize("mode", ALL_MODES)
def test_a_shotgun_of_guessed_writes_earns_no_shaped_reward_in_any_mode(mode):
    """Over 80 telecom train tasks and the whole test split: wherever the task reward fails the shotgun, no mode
    pays it anything (it used to earn partial credit for the gold rows its guesses happened to hit)."""
    env = MuaEnv("telecom", split="test", reward=mode)
    ran = 0
    for task in _shotgun_tasks():
        reward, _, _, info = run(env, task, ShotgunAgent())
        ri = info["reward_info"]
        ran += info["tool_calls"] >= 4  # it found the line and fired its writes
        if ri["task_reward"] == 0.0:
            assert reward == 0.0, (mode, task.id, ri)
            if mode == "partial":
                assert ri["partial_credit"] == 0.0, (task.id, ri)
    assert ran > len(_shotgun_tasks()) * 0.9


def test_the_task_reward_pays_the_shotgun_only_where_its_guesses_are_the_whole_fix():
    """Generated telecom tasks compare the whole final world with the gold one (DB) besides the env assertions:
    a write nobody asked for fails the task. What is left is luck: a task whose only account fixes are ones the
    shotgun makes anyway, with the amount it guesses (the customer asked for 1 GB): 4 of these 230."""
    env = _env("telecom", "task")
    tasks = _shotgun_tasks()
    guesses = {name: args for name, args in _SHOTGUN}
    paid = [task for task in tasks if run(env, task, ShotgunAgent())[0] > 0]
    for task in paid:
        fixes = [a for a in task.gold_actions if a.requestor == "assistant" and a.name in guesses]
        assert task.category in ("data_exhausted", "abroad_no_roaming") and fixes, task.id
        assert all(a.name != "refuel_data" or a.arguments["gb_amount"] == guesses["refuel_data"]["gb_amount"]
                   for a in fixes), task.id
    assert len(paid) <= len(tasks) // 50, [t.id for t in paid]


def test_a_gold_row_given_a_wrong_value_is_a_miss_and_an_extra_row():
    """A task that wants 1.5 GB refuelled; the shotgun refuels 1.0 GB: those rows are wrong, not half right, and its
    other writes are strays: no credit."""
    env = MuaEnv("telecom", split="train", reward="partial")
    task = next(t for t in env.core.tasks("train")
                if any(a.name == "refuel_data" and a.arguments.get("gb_amount") == 1.5 for a in t.gold_actions))
    reward, _, _, info = run(env, task, ShotgunAgent())
    ri = info["reward_info"]
    assert ri["task_reward"] == 0.0 and ri["rows_reproduced"] < ri["gold_rows_changed"]
    assert ri["wrong_rows"] >= 1 and ri["stray_writes"] >= 1
    assert ri["partial_credit"] == 0.0 and reward == 0.0


def _extreme_infos() -> list[tuple[RewardInfo, dict]]:
    """(scored episode, call counts) at the extremes: full and no partial credit, clean, many errors, far over
    budget, no calls at all."""
    infos = [RewardInfo(reward=reward, components={}, partial_credit=credit, db_diff={}, gold_rows_changed=rows,
                        rows_reproduced=int(rows * credit), extra_rows_changed=0)
             for reward in (0.0, 1.0) for credit in (0.0, 0.5, 1.0) for rows in (0, 4)]
    counts = [{"calls": calls, "invalid_calls": bad, "gold_calls": gold, "gold_invalid_calls": 0}
              for calls, bad, gold in ((0, 0, 0), (1, 0, 1), (12, 6, 3), (12, 12, 1), (200, 0, 1), (200, 200, 1),
                                       (3, 0, 3))]
    return [(info, c) for info in infos for c in counts]


@pytest.mark.parametrize("mode", ALL_MODES)
def test_the_worst_success_out_earns_the_best_failure_in_every_mode(mode):
    parsed = reward_mode(mode)
    paid = {True: [], False: []}
    for info, counts in _extreme_infos():
        shaped = shape(parsed, info, **counts).shaped_reward
        paid[info.reward == 1.0].append(shaped)
    assert SUCCESS_FLOOR <= min(paid[True]) and max(paid[True]) == 1.0
    assert 0.0 == min(paid[False]) and max(paid[False]) <= PARTIAL_FAILURE_SCALE
    assert min(paid[True]) > max(paid[False]), (mode, min(paid[True]), max(paid[False]))
    if parsed.base == "partial":
        assert max(paid[False]) == PARTIAL_FAILURE_SCALE  # the best failure: full credit, clean, within budget
