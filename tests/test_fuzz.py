"""The seeded action fuzzer (mua_gym.eval.fuzz) over every domain: step never raises, never stalls, never
half-writes, and every trajectory serialises. benchmarks/fuzz.py runs the same generator at scale."""

import pytest

import mua_gym
from mua_gym.eval import fuzz as testing
from mua_gym.eval.fuzz import fuzz
from mua_gym.world import World

SMALL = {"count": 40}  # generated tasks: a small set keeps the first reset of each domain short
ACTIONS = {"mock": 2500, "retail": 3000, "airline": 3000, "telecom": 3000}  # 20,000 actions in all
CONFIGS = [(domain, user, None if domain == "mock" else SMALL, ACTIONS[domain])
           for domain, user in testing.fuzz_setups(ACTIONS)]


def test_the_configs_make_twenty_thousand_actions():
    assert sum(c[3] for c in CONFIGS) >= 20_000


def test_the_setups_come_from_the_registry_and_each_domains_declaration():
    """Every registered domain, with the scripted user unless it is dual control; phone phrases from a domain's
    user vocabulary, or naming its user tools where it declares none."""
    setups = testing.fuzz_setups()
    assert set(testing.fuzz_setups(ACTIONS)) <= set(setups) and len(testing.fuzz_setups(ACTIONS)) == 7
    assert ("telecom", "scenario") in setups and ("telecom", "scripted") not in setups
    telecom = mua_gym.get_domain("telecom")
    assert testing.user_phrases(telecom) == list(telecom.user_vocabulary.samples)
    assert testing.user_phrases(mua_gym.get_domain("mock")) == ["please run toggle_notifications"]
    assert testing.user_phrases(mua_gym.get_domain("retail")) == []


@pytest.mark.parametrize("domain,user,params,actions", CONFIGS, ids=[f"{c[0]}-{c[1]}" for c in CONFIGS])
def test_fuzzed_actions_keep_the_contract(domain, user, params, actions):
    counts = fuzz(domain, user, actions, seed=11, world_params=params)
    assert counts.ok, "\n".join(counts.failures)
    assert counts.actions == actions and counts.exceptions == 0
    assert counts.slowest_step_s < testing.SLOW_STEP_S
    assert counts.all_error_steps > actions // 5 and counts.all_error_steps_changed_world == 0
    assert counts.trajectories_serialised == counts.episodes > 1
    assert counts.tool_calls_ok > actions // 20  # valid calls get through too, so writes are fuzzed as well


def test_the_fuzzer_is_deterministic():
    a = fuzz("mock", "scripted", 300, seed=5)
    b = fuzz("mock", "scripted", 300, seed=5)
    c = fuzz("mock", "scripted", 300, seed=6)
    fields = lambda x: {k: v for k, v in vars(x).items() if k != "slowest_step_s"}  # noqa: E731
    assert fields(a) == fields(b)
    assert fields(a) != fields(c)


def test_the_fuzzer_catches_a_world_that_half_writes(monkeypatch):
    real = World.call_tool

    def leaky(self, name, arguments=None, requestor="assistant"):
        result = real(self, name, arguments, requestor)
        if result.error and requestor == "assistant":  # an error that leaves a write behind
            self.raw.execute("UPDATE customers SET name = name || 'x'")
        return result

    monkeypatch.setattr(World, "call_tool", leaky)
    counts = fuzz("mock", "scripted", 200, seed=3)
    assert counts.all_error_steps_changed_world > 0 and not counts.ok
    assert "changed the world" in counts.failures[0]


def test_the_fuzzer_catches_exceptions_and_slow_steps(monkeypatch):
    import time

    from mua_gym.env import core as env_module

    real = env_module.read_action
    calls = {"n": 0}

    def flaky(action, parser, turn):
        calls["n"] += 1
        if calls["n"] % 50 == 0:
            raise RuntimeError("boom")
        if calls["n"] == 7:  # a step that burns the CPU (the fuzzer times CPU, not the wall clock)
            end = time.thread_time() + testing.SLOW_STEP_S
            while time.thread_time() < end:
                pass
        return real(action, parser, turn)

    monkeypatch.setattr(env_module, "read_action", flaky)
    counts = fuzz("mock", "scripted", 200, seed=3)
    assert counts.exceptions == 4 and counts.slow_steps == 1 and not counts.ok
    assert any("RuntimeError: boom" in f for f in counts.failures)


def test_the_fuzzer_times_steps_without_the_garbage_collector(monkeypatch):
    """A collection walks the whole heap of a long test session (seconds of CPU after the trainer tests): that
    is not the step's cost, so the fuzzer pauses the collector while it times a step and restores it after."""
    import gc

    from mua_gym.env import core as env_module

    real = env_module.read_action
    seen = []

    def watched(action, parser, turn):
        seen.append(gc.isenabled())
        return real(action, parser, turn)

    monkeypatch.setattr(env_module, "read_action", watched)
    assert gc.isenabled()
    counts = fuzz("mock", "scripted", 50, seed=3)
    assert counts.actions == 50 and len(seen) >= 40 and not any(seen)
    assert gc.isenabled()
    gc.disable()
    try:
        fuzz("mock", "scripted", 5, seed=3)
        assert not gc.isenabled()  # a caller's own choice is left as it was
    finally:
        gc.enable()
