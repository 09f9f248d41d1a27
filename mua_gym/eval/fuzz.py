"""A seeded action fuzzer: hostile and half-right actions thrown at an env, with the contract checked after each.

``fuzz(domain, user, actions, seed)`` plays short episodes of random actions (random unicode with surrogates and
NUL bytes, Hermes blocks with broken JSON, bare JSON calls, dict actions with wrong types, unknown tools, the
user's own tools called by the agent, SQL-looking strings, huge integers, NaN and infinities, deep and circular
structures, many calls in one message, long spam texts, and valid calls with values drawn from the tasks' gold
calls, so that some succeed and write) and checks after every step that:

- nothing raised out of ``step`` (or ``reset``), and no step took ``SLOW_STEP_S`` CPU seconds or more (this
  thread's CPU time, with the garbage collector paused: what a super-linear parser costs, whatever else the
  machine is running and however large the rest of the process's heap is);
- a step whose tool messages were all errors, or whose action was unreadable, with no user turn, left the world's
  ``state_hash`` unchanged;
- a terminal step's reward is a float in [0, 1];
- every finished episode's trajectory serialises to one JSON line that reads back to the same record.

The same seed gives the same actions and, the env being seeded too, the same episodes. ``tests/test_fuzz.py`` runs
it in CI and ``benchmarks/fuzz.py`` at scale.
"""

from __future__ import annotations

import gc
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from mua_gym.domain import Domain
from mua_gym.messages import AssistantMessage, ToolCall
from mua_gym.env.parsing import MAX_TOOL_CALLS
from mua_gym.env.trajectory import Trajectory

__all__ = ["ActionFuzzer", "FuzzCounts", "SLOW_STEP_S", "fuzz", "fuzz_setups", "user_phrases"]

SLOW_STEP_S = 1.0
HUGE_DIGITS = "9" * 5000  # past Python's int-from-str limit (4,300 digits)
HUGE_INT = 10 ** 5000  # made by arithmetic: int("9" * 5000) itself raises
SQL = ["'; DROP TABLE users; --", "1 OR 1=1", "\" OR \"\"=\"", "'); DELETE FROM orders; --", "%", "_%_", "NULL",
       "Robert'); DROP TABLE Students;--", "1; UPDATE lines SET status='Active'", "' UNION SELECT * FROM bills --"]
ODD_TEXT = ["", " ", "\x00", "a\x00b", "\ud800", "\udfff", "x\ud83dy", "\ud83d\ude00", "\U0001f600", "\u202e", "\ufeff",
            "é", "\n\t", "\\", '"', "{", "}", "<tool_call>", "</tool_call>", "<think>", "</think>", "###STOP###",
            "null", "true", "-0", "1e999", "NaN"]
ODD_NUMBERS: list[Any] = [0, -1, 1, 2 ** 63, -(2 ** 63) - 1, 10 ** 30, 0.5, -0.0, 1e308, 5e-324, math.nan, math.inf,
                          -math.inf, True, False]


class _Huge:
    """An integer literal past Python's limit inside a value: written as digits in JSON text, as an int in Python."""


class _Raw:
    """JSON text written as it is (broken on purpose) inside an encoded value."""

    def __init__(self, text: str) -> None:
        self.text = text


def _encode(value: Any) -> str:
    """JSON text for a generated value: NaN and infinities as JavaScript names, :class:`_Huge` as its digits."""
    if isinstance(value, _Huge):
        return HUGE_DIGITS
    if isinstance(value, _Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {_encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_encode(v) for v in value) + "]"
    return json.dumps(value)


def _python(value: Any) -> Any:
    """A generated value as plain Python objects (:class:`_Huge` as an int, :class:`_Raw` as its text)."""
    if isinstance(value, _Huge):
        return HUGE_INT
    if isinstance(value, _Raw):
        return value.text
    if isinstance(value, dict):
        return {k: _python(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_python(v) for v in value]
    return value


def _deep_list(depth: int) -> list[Any]:
    outer: list[Any] = []
    inner = outer
    for _ in range(depth):
        nested: list[Any] = []
        inner.append(nested)
        inner = nested
    return outer


def _circular() -> dict[str, Any]:
    loop: dict[str, Any] = {"a": 1}
    loop["self"] = loop
    return loop


class ActionFuzzer:
    """Draws actions for one env from a numpy Generator.

    ``tools`` are the agent's OpenAI schemas, ``user_tools`` the names of the user's own tools (dual control),
    ``values`` argument values seen in the tasks' gold calls, by argument name. ``phrases`` are requests for the
    user to act (:func:`user_phrases`; none where the user has no tools). ``max_size`` bounds the long texts
    (characters).
    """

    def __init__(self, rng: np.random.Generator, tools: list[dict[str, Any]], user_tools: list[str],
                 values: dict[str, list[Any]], *, phrases: Sequence[str] = (), max_size: int = 20_000) -> None:
        self.rng = rng
        self.tools = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
        self.tool_names = sorted(self.tools)
        self.user_tools = sorted(user_tools)
        self.values = values
        self.value_names = sorted(values)
        self.phrases = list(phrases)
        self.max_size = max_size
        self.gold_calls: list[tuple[str, dict[str, Any]]] = []
        self._shapes: list[tuple[float, Callable[[], Any]]] = [
            (6, self._valid_call), (2, self._gold_call), (3, self._text), (2, self._hermes_broken),
            (2, self._bare_json), (2, self._wrong_types), (1, self._unknown_tool), (1, self._user_tool),
            (1, self._many_calls), (1, self._huge_number), (1, self._deep_or_circular), (1, self._spam),
            (1, self._odd_message),
        ]
        weights = np.array([w for w, _ in self._shapes])
        self._weights = weights / weights.sum()

    # -- drawing helpers -------------------------------------------------------------------------------------
    def _pick(self, items: list[Any]) -> Any:
        return items[int(self.rng.integers(len(items)))]

    def _chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def _unicode(self, n: int) -> str:
        """``n`` random code points, surrogates and NUL included."""
        points = self.rng.integers(0, 0x110000, size=n)
        low = self.rng.random(n) < 0.5  # half from the first planes, where letters, controls and surrogates are
        points[low] = self.rng.integers(0, 0x10000, size=int(low.sum()))
        return "".join(map(chr, points.tolist()))

    def _string(self) -> Any:
        roll = self.rng.random()
        if roll < 0.35 and self.value_names:
            value = self._pick(self.values[self._pick(self.value_names)])
            return value if isinstance(value, str) else str(value)
        if roll < 0.55:
            return self._pick(ODD_TEXT)
        if roll < 0.7:
            return self._pick(SQL)
        return self._unicode(int(self.rng.integers(0, 40)))

    def _value(self, depth: int = 0) -> Any:
        roll = self.rng.random()
        if roll < 0.4:
            return self._string()
        if roll < 0.6:
            return self._pick(ODD_NUMBERS)
        if roll < 0.65:
            return _Huge()
        if roll < 0.7:
            return None
        if depth >= 2:
            return int(self.rng.integers(-5, 100))
        if roll < 0.85:
            return [self._value(depth + 1) for _ in range(int(self.rng.integers(0, 4)))]
        return {self._string() if self._chance(0.3) else self._pick(["a", "id", "x"]): self._value(depth + 1)
                for _ in range(int(self.rng.integers(0, 3)))}

    def _argument(self, name: str, spec: dict[str, Any]) -> Any:
        if name in self.values and self._chance(0.75):
            return self._pick(self.values[name])
        kind = spec.get("type")
        if kind == "string" and self._chance(0.5):
            return self._string()
        if kind in ("integer", "number") and self._chance(0.5):
            return self._pick(ODD_NUMBERS)
        return self._value()

    def _arguments(self, tool: str, completeness: float) -> dict[str, Any]:
        params = self.tools.get(tool, {})
        props = params.get("properties", {})
        args = {n: self._argument(n, s) for n, s in props.items() if self._chance(completeness)}
        if self._chance(0.1):
            args[self._string() if self._chance(0.5) else "unexpected"] = self._value()
        return args

    # -- encoding one call, or a message of calls ------------------------------------------------------------
    def _message(self, calls: list[tuple[str, Any]]) -> Any:
        """The calls as one action, in one of the forms ``step`` accepts (or nearly)."""
        form = int(self.rng.integers(6))
        think = self._pick(["", "<think>let me see</think>", "<think>unclosed", "done</think>"])
        if form == 0:
            blocks = "".join(f"<tool_call>{self._text_call(n, a)}</tool_call>" for n, a in calls)
            return think + self._pick(["", "Sure. ", self._string()]) + blocks
        if form == 1:
            body = [f'{{"name": {json.dumps(n)}, "arguments": {_encode(a)}}}' for n, a in calls]
            return think + (body[0] if len(body) == 1 else "[" + ", ".join(body) + "]")
        if form == 2:
            return {"role": "assistant", "content": self._pick([None, "", self._string()]), "tool_calls": [
                {"id": self._pick([f"c{i}", "", "dup", 7]), "type": "function",
                 "function": {"name": n, "arguments": _encode(a) if self._chance(0.5) else _python(a)}}
                for i, (n, a) in enumerate(calls)]}
        if form == 3:
            return [{"name": n, "arguments": _python(a)} for n, a in calls]
        if form == 4 and len(calls) == 1:
            name, args = calls[0]
            return {"name": name, "arguments": _python(args)}
        return AssistantMessage(content=self._pick([None, "ok"]), tool_calls=[
            ToolCall(id=self._pick(["", "m1"]), function={"name": n, "arguments": _encode(a)}) for n, a in calls])

    def _text_call(self, name: str, args: Any) -> str:
        return f'{{"name": {json.dumps(name)}, "arguments": {_encode(args)}}}'

    # -- the shapes ------------------------------------------------------------------------------------------
    def _valid_call(self) -> Any:
        tool = self._pick(self.tool_names)
        return self._message([(tool, self._arguments(tool, 0.9))])

    def _gold_call(self) -> Any:
        if not self.gold_calls:
            return self._valid_call()
        name, args = self._pick(self.gold_calls)
        return self._message([(name, dict(args))])

    def _text(self) -> Any:
        roll = self.rng.random()
        if roll < 0.3:
            return self._unicode(int(self.rng.integers(0, 200)))
        if roll < 0.5:
            return "I can help with that. " + self._string()
        if roll < 0.6:
            return {"role": "assistant", "content": [{"type": "text", "text": self._string()}, {"text": 5}]}
        if roll < 0.7 and self.phrases:
            return self._pick(self.phrases)
        return self._string() + self._pick(["", "?", " Anything else?", "\x00"])

    def _hermes_broken(self) -> str:
        tool = self._pick(self.tool_names)
        text = self._text_call(tool, self._arguments(tool, 0.8))
        cut = int(self.rng.integers(0, len(text) + 1))
        broken = self._pick([text[:cut], text[:cut] + self._string() + text[cut:], text.replace('"', "'"),
                             "{oops", "", "null", "[]", '{"function": 3}', '{"name": 12}', text + "}}"])
        return f"<tool_call>{broken}" + self._pick(["</tool_call>", "", "</tool_call><tool_call>"])

    def _bare_json(self) -> str:
        tool = self._pick(self.tool_names)
        body = self._text_call(tool, self._arguments(tool, 0.8))
        return self._pick([body, f"```json\n{body}\n```", "[" + body + ", " + body + "]", body[:-1], "[]", "{}",
                           '{"answer": 42}', '{"name": "x", "arguments": NaN}'])

    def _wrong_types(self) -> Any:
        tool = self._pick(self.tool_names)
        return self._pick([
            {"name": tool, "arguments": self._pick([[1, 2], "not json", 5, None, "[]", '"str"'])},
            {"name": self._pick([5, None, ["a"], {"n": 1}]), "arguments": {}},
            {"role": self._pick(["user", "system", None, 3, HUGE_INT]), "content": "x"},
            {"role": "assistant", "content": self._pick([7, {"a": 1}, ["x", 3]])},
            {"role": "assistant", "tool_calls": self._pick(["abc", 5, {"a": 1}, [1, 2], [None]])},
            {"role": "assistant", "reasoning_content": 5},
            {"role": "assistant", "tool_calls": [{"id": HUGE_INT, "function": {"name": tool, "arguments": "{}"}}]},
            self._pick([None, 42, 3.5, b"bytes", {1, 2}, (), [], object()]),
        ])

    def _unknown_tool(self) -> Any:
        name = self._pick(["no_such_tool", "", "<malformed>", "\ud800", "DROP TABLE x", "get_order ", self._string(),
                           "x" * 5000])
        return self._message([(name, self._value())])

    def _user_tool(self) -> Any:
        if not self.user_tools:
            return self._unknown_tool()
        return self._message([(self._pick(self.user_tools), {})])

    def _many_calls(self) -> Any:
        n = MAX_TOOL_CALLS + 1 if self._chance(0.05) else int(self.rng.integers(2, 12))
        calls = []
        for _ in range(n):
            tool = self._pick(self.tool_names)
            calls.append((tool, self._arguments(tool, 0.9)))
        return self._message(calls)

    def _huge_number(self) -> Any:
        tool = self._pick(self.tool_names)
        props = list(self.tools[tool].get("properties", {})) or ["amount"]
        args: dict[str, Any] = {n: self._argument(n, {}) for n in props}
        args[self._pick(props)] = self._pick([_Huge(), math.nan, math.inf, -math.inf, _Raw("1e999"),
                                              _Raw("-" + HUGE_DIGITS), _Raw("Infinity"), _Raw("NaN")])
        return self._message([(tool, args)])

    def _deep_or_circular(self) -> Any:
        tool = self._pick(self.tool_names)
        depth = int(self.rng.integers(900, 3000))
        return self._pick([
            {"name": tool, "arguments": {"x": _deep_list(depth)}},
            {"name": tool, "arguments": _circular()},
            {"role": "assistant", "tool_calls": [{"function": {"name": tool, "arguments": _circular()}}]},
            f'<tool_call>{{"name": "{tool}", "arguments": {{"x": ' + "[" * depth + "]" * depth + "}}</tool_call>",
            "[" * depth,
            '{"name": "' + tool + '", "arguments": ' + '{"a": ' * depth + "1" + "}" * depth + "}",
        ])

    def _spam(self) -> str:
        n = int(self.rng.integers(1, self.max_size // 8))
        shapes = ["<think>" * n, "</think>" * n, "<tool_call>{" * n, "<tool_call></tool_call>" * min(n, 400),
                  "[" * n, "{" * n, '"' * n, self._unicode(min(n, 5000)), "\x00" * n, "\ud800" * n]
        if self.phrases:  # the request shapes the scenario user's matching of a user's requests has been slow on
            shapes += ["please " + "turn " * n, "please " + "toggle " * n, "could you please " * n + "reboot"]
        return self._pick(shapes)

    def _odd_message(self) -> Any:
        return self._pick([
            AssistantMessage(content="\ud800 hi <think>x</think>"),
            ToolCall(id="", function={"name": self._pick(self.tool_names), "arguments": "\ud800"}),
            {"role": "assistant", "content": None},
            {"role": "assistant", "content": "", "tool_calls": []},
            {"role": "assistant", "content": "ok", "tool_calls": None, "reasoning_content": "\udfff"},
        ])

    def action(self) -> Any:
        """One action, of a shape drawn by the shapes' weights."""
        shape = self._shapes[int(self.rng.choice(len(self._shapes), p=self._weights))][1]
        return shape()


@dataclass
class FuzzCounts:
    """What one fuzz run saw, for one domain and user."""

    domain: str
    user: str
    actions: int = 0
    episodes: int = 0
    exceptions: int = 0
    slow_steps: int = 0
    slowest_step_s: float = 0.0
    all_error_steps: int = 0
    all_error_steps_changed_world: int = 0
    bad_rewards: int = 0
    trajectories_serialised: int = 0
    trajectories_failed: int = 0
    tool_calls_ok: int = 0
    #: The first failures, each with what reproduces it (domain, user, seed, action index).
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.exceptions or self.slow_steps or self.all_error_steps_changed_world or self.bad_rewards
                    or self.trajectories_failed)

    def _fail(self, seed: int, index: int, what: str, action: Any) -> None:
        if len(self.failures) < 20:
            self.failures.append(f"{self.domain}/{self.user} seed {seed} action #{index}: {what}; "
                                 f"action {_describe(action)}")


def _describe(action: Any) -> str:
    """A short description of an action that cannot raise (a repr of a deep structure can)."""
    try:
        text = repr(action)
    except (RecursionError, ValueError):
        text = f"<{type(action).__name__} too deep or large to print>"
    return text[:300] + ("..." if len(text) > 300 else "")


def fuzz_setups(domains: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """The (domain, user) pairs the fuzzer covers: each of ``domains`` (None: every registered one), with the
    scripted user where its tasks need none of the user's own actions (not dual control), and the scenario user."""
    from mua_gym.domain.registry import available_domains, get_domain

    pairs: list[tuple[str, str]] = []
    for name in available_domains() if domains is None else domains:
        if not get_domain(name).dual_control:
            pairs.append((name, "scripted"))
        pairs.append((name, "scenario"))
    return pairs


def user_phrases(domain: Domain) -> list[str]:
    """Requests for the user of ``domain`` to act: those its ``user_vocabulary`` samples, else one naming each user
    tool outright; none for a user without tools."""
    tools = domain.user_tools.names() if domain.user_tools else []
    if not tools:
        return []
    if domain.user_vocabulary is not None:
        return list(domain.user_vocabulary.sample_requests())
    return [f"please run {name}" for name in tools]


def _gold_values(tasks: list[Any]) -> tuple[dict[str, list[Any]], list[tuple[str, dict[str, Any]]]]:
    """(argument values by name, the assistant's gold calls) over ``tasks``, in a fixed order."""
    values: dict[str, list[Any]] = {}
    calls: list[tuple[str, dict[str, Any]]] = []
    for task in tasks:
        for action in task.gold_actions:
            if action.requestor != "assistant":
                continue
            calls.append((action.name, dict(action.arguments)))
            for name, value in action.arguments.items():
                seen = values.setdefault(name, [])
                if value not in seen:
                    seen.append(value)
    return values, calls


def _check_trajectory(env: Any, counts: FuzzCounts, seed: int, index: int) -> None:
    try:
        trajectory = env.trajectory()
        line = trajectory.to_json_line()
        if Trajectory.from_json_line(line).to_json_line() != line:
            raise AssertionError("the trajectory read back differs")
        counts.trajectories_serialised += 1
    except Exception as exc:  # counted: the contract says a trajectory always serialises
        counts.trajectories_failed += 1
        counts._fail(seed, index, f"trajectory: {type(exc).__name__}: {str(exc)[:200]}", None)


def fuzz(domain: str, user: str, actions: int, seed: int, *, world_params: dict[str, Any] | None = None,
         max_turns: int = 8, max_size: int = 20_000) -> FuzzCounts:
    """Plays ``actions`` fuzzed actions against ``MuaEnv(domain, user=user)`` (episodes of at most ``max_turns``)
    and returns what it saw (see the module docstring)."""
    from mua_gym.env.gym_env import MuaEnv

    rng = np.random.default_rng(seed)
    env = MuaEnv(domain, user=user, world_params=world_params, max_turns=max_turns)
    core = env.core
    values, gold_calls = _gold_values(core.tasks())
    user_tools = core.domain.user_tools.names() if core.domain.user_tools else []
    fuzzer = ActionFuzzer(rng, core.tool_schemas, user_tools, values, phrases=user_phrases(core.domain),
                          max_size=max_size)
    fuzzer.gold_calls = gold_calls
    counts = FuzzCounts(domain, user)
    need_reset = True
    index = -1
    for index in range(actions):
        if need_reset:
            if counts.episodes:
                _check_trajectory(env, counts, seed, index)
            try:
                env.reset(seed=int(rng.integers(2 ** 31)))
            except Exception as exc:
                counts.exceptions += 1
                counts._fail(seed, index, f"reset raised {type(exc).__name__}: {str(exc)[:200]}", None)
                break
            counts.episodes += 1
            need_reset = False
        action = fuzzer.action()
        before = env.world.state_hash()
        seen = len(core.messages())
        collecting = gc.isenabled()
        gc.disable()  # a collection walks the whole process's heap: in a long test session, seconds of it
        started = time.thread_time()
        try:
            obs, reward, terminated, truncated, info = env.step(action)
        except Exception as exc:
            counts.exceptions += 1
            counts._fail(seed, index, f"step raised {type(exc).__name__}: {str(exc)[:200]}", action)
            need_reset = True
            continue
        finally:
            elapsed = time.thread_time() - started
            if collecting:
                gc.enable()
        counts.actions += 1
        counts.slowest_step_s = max(counts.slowest_step_s, elapsed)
        if elapsed >= SLOW_STEP_S:
            counts.slow_steps += 1
            counts._fail(seed, index, f"step took {elapsed:.2f} CPU s", action)
        new = core.messages()[seen:]
        tool_results = [m for m in new if m.role == "tool"]
        counts.tool_calls_ok += sum(not m.error for m in tool_results)
        user_turn = any(m.role == "user" for m in new)
        unreadable = not tool_results and "error" in info
        all_errors = unreadable or (bool(tool_results) and all(m.error for m in tool_results))
        if all_errors and not user_turn:
            counts.all_error_steps += 1
            if env.world.state_hash() != before:
                counts.all_error_steps_changed_world += 1
                counts._fail(seed, index, "an all-error step changed the world", action)
        if terminated and not (isinstance(reward, float) and 0.0 <= reward <= 1.0):
            counts.bad_rewards += 1
            counts._fail(seed, index, f"terminal reward {reward!r}", action)
        need_reset = terminated or truncated
    if counts.episodes:
        _check_trajectory(env, counts, seed, index + 1)
    env.close()
    return counts
