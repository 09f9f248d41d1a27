"""examples/thermostat_domain.py: a third-party dual-control domain declares what its user understands in words, and
the built-in scenario user, blind baselines and fuzzer use it as they use telecom's."""

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mua_gym import MuaEnv
from mua_gym.domain import UserVocabulary
from mua_gym.user_sims import ScenarioUser
from mua_gym.user_sims.tool_requests import reader_for

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "thermostat_domain.py"


@pytest.fixture(scope="module")
def example():
    """The example's module, imported by path; its domain is not registered in this process."""
    spec = importlib.util.spec_from_file_location("thermostat_domain", EXAMPLE)
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # SQLAlchemy reads its annotations there
    spec.loader.exec_module(module)
    return module


def test_the_example_pays_the_agent_that_asks_and_no_agent_that_skips_the_customers_part():
    result = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["asked in words: 1.0", "oracle: 1.0", "agent's part only: 0.0",
                                          "blind requests: 0.0"]


def test_the_scenario_user_reads_the_domains_words(example):
    reader = reader_for(example.VOCABULARY)
    tools = frozenset(example.DOMAIN.user_tools.names())
    for setting in example.VOCABULARY.settings:
        for text in setting.examples:
            request = reader.request_in_words(f"please {text}.", tools)
            assert request is not None and request.kind != "ask", text
            assert {name for name, _ in request.calls} <= set(setting.tools), (text, request)
    assert reader.request_in_words("could you put it on night mode?", tools).calls == (
        ("set_program", {"program": "night"}),)
    assert reader.request_in_words("please change your thermostat program.", tools).reply.startswith("Which program")
    assert reader.request_in_words("please don't turn off eco mode.", tools) is None
    assert reader.request_in_words("i will resume the heating schedule. can you confirm?", tools) is None


@pytest.mark.parametrize("words, reward", [(None, 1.0), (UserVocabulary(()), 0.0)])
def test_without_the_words_the_user_does_not_act_and_the_task_fails(example, words, reward):
    """The same agent, asking in words: paid when its user understands the domain's words, not when it
    understands none (the domain is not registered here: the user is given its words directly)."""
    user = ScenarioUser(vocabulary=words or example.VOCABULARY)
    assert example.play(MuaEnv(example.DOMAIN, user=user), example.IN_WORDS) == reward


def test_an_env_of_an_unregistered_domain_gives_the_user_it_makes_the_domains_words(example):
    """The env hands the scenario user it makes (by name) its domain's words: no registry is asked; a user the caller
    built keeps the words it was given."""
    env = MuaEnv(example.DOMAIN, user="scenario")
    assert env.core.user.vocabulary is example.VOCABULARY
    assert example.play(env, example.IN_WORDS) == 1.0
    given = ScenarioUser()
    assert MuaEnv(example.DOMAIN, user=given).core.user.vocabulary is None


def test_the_fuzzer_and_the_audit_use_the_declared_words():
    code = textwrap.dedent(f"""
        import importlib.util, sys, mua_gym
        spec = importlib.util.spec_from_file_location("thermostat_domain", {str(EXAMPLE)!r})
        example = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(example)
        mua_gym.register_domain(example.DOMAIN)
        from mua_gym.eval.fuzz import fuzz, fuzz_setups, user_phrases
        from mua_gym.eval.audit import audit
        assert ("thermostat", "scenario") in fuzz_setups() and ("thermostat", "scripted") not in fuzz_setups()
        assert user_phrases(example.DOMAIN)[0] == "please turn off eco mode"
        counts = fuzz("thermostat", "scenario", 400, seed=0)
        assert counts.ok, counts.failures
        rows = audit("mua/Thermostat-v0", split="test", only=["blind-requests", "lookup-shotgun", "oracle"])
        print({{row.strategy: row.paid for row in rows}})
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "{'blind-requests': 0.0, 'lookup-shotgun': 0.0, 'oracle': 1.0}"
