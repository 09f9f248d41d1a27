import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import mua_gym
from mua_gym.domain import registry

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "thirdparty_domain"


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory):
    """pip-installs the example third-party package into a folder that a child interpreter puts on its path."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(EXAMPLE)], check=True)
    return target


def run_python(code: str, path: Path) -> subprocess.CompletedProcess:
    import os

    env = dict(os.environ, PYTHONPATH=str(path))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=300)


def fake_distribution(folder: Path, name: str, entry_point: str) -> None:
    """The metadata of an installed distribution ``name`` declaring one ``mua_gym.domains`` entry point."""
    info = folder / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[mua_gym.domains]\n{entry_point}\n")


def test_entry_point_domain_is_found_and_plays(plugin_path):
    result = run_python("""
        import mua_gym, gymnasium, sys
        assert "pizza" in mua_gym.available_domains()
        assert "mua_pizza" not in sys.modules          # registered by name, loaded lazily
        env = gymnasium.make("mua/Pizza-v0")
        from mua_gym.eval.agents import OracleAgent
        task = mua_gym.get_domain("pizza").tasks("test")[0]
        obs, info = env.reset(options={"task": task})
        agent = OracleAgent(task)
        done = False
        while not done:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs))
            done = terminated or truncated
        print("reward", reward)
    """, plugin_path)
    assert result.returncode == 0, result.stderr
    assert "reward 1.0" in result.stdout


def test_broken_plugin_warns_and_spares_the_others(tmp_path):
    fake_distribution(tmp_path, "broken-dist", "broken = no_such_module_xyz:DOMAIN")
    result = run_python("""
        import warnings, mua_gym
        assert "broken" in mua_gym.available_domains()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                mua_gym.get_domain("broken")
            except mua_gym.domain.registry.DomainLoadError as exc:
                print("error:", exc)
        print("warned:", [str(w.message) for w in caught])
        env = mua_gym.make("mua/Mock-v0")
        env.reset(seed=0)
        print("mock ok")
    """, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "no_such_module_xyz" in result.stdout and "broken = no_such_module_xyz:DOMAIN" in result.stdout
    warned = result.stdout.split("warned:", 1)[1]
    assert "mua_gym: domain plugin entry point broken = no_such_module_xyz:DOMAIN failed to load" in warned
    assert "mock ok" in result.stdout


def test_register_domain_object_directly(mock):
    from dataclasses import replace

    twin = replace(mock, name="mock_twin")
    env_id = mua_gym.register_domain(twin)
    assert env_id == "mua/MockTwin-v0" and twin.env_name == "MockTwin"
    with pytest.raises(TypeError, match="env_name"):  # the id comes from the name alone: no field to disagree
        replace(mock, name="pizza_shop", env_name="PizzaCounter")
    env = mua_gym.make(env_id)
    obs, info = env.reset(seed=0)
    assert info["domain"] == "mock_twin"


def test_unknown_domain_is_a_clear_error():
    with pytest.raises(KeyError, match="unknown domain 'nowhere'"):
        mua_gym.get_domain("nowhere")
    assert registry.env_id("my_shop") == "mua/MyShop-v0"


def test_the_builtin_domains_come_through_the_entry_point_group():
    from importlib.metadata import entry_points

    own = {ep.name: ep.value for ep in entry_points(group=registry.ENTRY_POINT_GROUP) if registry._is_builtin(ep)}
    assert own == {name: f"mua_gym.domains.{name}:DOMAIN" for name in ("airline", "mock", "retail", "telecom")}
    assert set(own) <= set(mua_gym.available_domains())
    assert mua_gym.get_domain("retail").name == "retail"


def test_a_plugin_cannot_take_a_builtin_name(tmp_path):
    fake_distribution(tmp_path, "squatter-dist", "retail = no_such_module_xyz:DOMAIN")
    result = run_python("""
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import mua_gym
        print("warned:", [str(w.message) for w in caught])
        print("loaded:", mua_gym.get_domain("retail").tools.names()[:1])
    """, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "plugin 'no_such_module_xyz:DOMAIN' uses the built-in domain name 'retail'; ignored" in result.stdout
    assert "loaded: ['" in result.stdout


def test_the_guide_s_short_forms_and_checks_hold_for_the_example_domain(plugin_path):
    result = run_python("""
        import mua_gym
        from mua_gym.eval.fuzz import fuzz
        from mua_gym.tools import Toolkit
        domain = mua_gym.get_domain("pizza")   # written with a tool list and single source functions
        assert isinstance(domain.tools, Toolkit)
        assert domain.tools.names() == ["list_menu", "order_pizza", "cancel_ticket"], domain.tools.names()
        assert set(domain.worlds) == set(domain.task_sources) == {"generated"}
        counts = fuzz("pizza", "scripted", actions=300, seed=0)
        print("fuzz", counts.ok, counts.episodes, counts.tool_calls_ok, counts.failures)
    """, plugin_path)
    assert result.returncode == 0, result.stderr
    ok, episodes, calls_ok, _ = result.stdout.split("fuzz ", 1)[1].split(" ", 3)
    assert ok == "True", result.stdout
    assert int(episodes) > 1 and int(calls_ok) > 0  # the fuzz ran whole episodes and some calls succeeded


def test_the_reward_audit_runs_on_a_third_party_domain(plugin_path):
    import os

    env = dict(os.environ, PYTHONPATH=str(plugin_path))
    result = subprocess.run([sys.executable, "-m", "mua_gym.cli", "audit", "--env", "mua/Pizza-v0", "--split", "test"],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {line.split("|")[1].strip(): line.split("|")[5].strip() for line in result.stdout.splitlines()
            if line.startswith("| ") and "---" not in line and "strategy" not in line}
    assert rows["oracle"] == rows["fair"] == "100.0%"
    assert rows["lookup-dump"] == rows["lookup-stop"] == rows["blind-answers"] == "0.0%"
    assert len(rows) >= 20


def test_a_domain_is_its_declaration_and_its_derived_state_lives_apart(mock):
    import dataclasses
    import gc
    import weakref

    from mua_gym.domain.state import state_of

    with pytest.raises(dataclasses.FrozenInstanceError):
        mock.policy = "anything"  # the author's declaration, once made
    assert not any(name.startswith("_") for name in vars(mock))  # no caches, no locks on it
    twin = dataclasses.replace(mock, name="mock_state_twin")
    twin.tasks("test")
    assert state_of(twin).tasks and state_of(twin) is not state_of(mock)
    gone = weakref.ref(state_of(twin))
    del twin
    gc.collect()
    assert gone() is None  # kept only as long as its domain
