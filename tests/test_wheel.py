"""What a user installs: the sdist and the wheel, built from this checkout, installed into a fresh venv that
cannot see the checkout, where every module imports and the README's main job plays.

An editable install hides a module or data file that the wheel lacks; this test is where such a gap fails.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: The three source roots setup.cfg maps into the one ``mua_gym`` namespace.
ROOTS = {"mua_gym": ROOT / "mua_gym", "mua_gym.domains": ROOT / "domains", "mua_gym.user_sims": ROOT / "user_sims"}

#: Run inside the venv: imports every module of the installed package, then plays one episode per built-in domain.
IN_VENV = r"""
import importlib, pkgutil, sys
import mua_gym
from mua_gym.eval.agents import make_agent
assert "site-packages" in mua_gym.__file__, mua_gym.__file__
names = ["mua_gym"] + [m.name for m in pkgutil.walk_packages(mua_gym.__path__, "mua_gym.")]
optional = ("mua_gym.integrations.",)  # each needs its trainer's extra, which this venv leaves out
imported = 0
for name in names:
    if name.startswith(optional) and name != "mua_gym.integrations":
        continue
    importlib.import_module(name)
    imported += 1
played = []
for env_id, user in (("mua/Mock-v0", "scripted"), ("mua/Retail-v0", "scripted"), ("mua/Airline-v0", "scripted"),
                     ("mua/Telecom-v0", "scenario")):
    env = mua_gym.make(env_id, user=user, split="test")
    obs, info = env.reset(seed=0)
    agent = make_agent("oracle", env.unwrapped.core.task)
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs))
        done = terminated or truncated
    assert reward == 1.0, (env_id, info)
    played.append(env_id)
print(f"imported {imported} of {len(names)} modules; played {', '.join(played)} at reward 1.0")
"""


def declared_packages() -> set[str]:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return set(config["options"]["packages"].split())


def tree_packages() -> set[str]:
    """Every folder with an ``__init__.py`` under the three roots, named as installed."""
    found = set()
    for prefix, root in ROOTS.items():
        for init in root.rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            parts = init.parent.relative_to(root).parts
            found.add(".".join((prefix, *parts)))
    return found


def test_setup_cfg_lists_every_package_of_the_tree():
    """setup.cfg must list packages by hand (find: cannot map three roots into one namespace): none may be left
    out, or the wheel installs and ``import mua_gym`` fails."""
    assert tree_packages() - declared_packages() == set()
    assert declared_packages() - tree_packages() == set()


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float | None = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, \
        f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """The sdist and the wheel of this checkout's files (what a clone holds: tracked, or new and not ignored),
    built in a copy, so no build/ folder of the checkout's leaks in (built without isolation: setuptools and
    wheel are test extras)."""
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("dist")
    listed = _run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT)
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    _run([sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "--outdir", str(out), str(source)],
         cwd=out)
    files = {p.suffix if p.suffix == ".whl" else ".tar.gz": p for p in out.iterdir()}
    assert set(files) == {".whl", ".tar.gz"}, sorted(out.iterdir())
    return files


@pytest.mark.slow
def test_wheel_holds_every_module_and_data_file(built):
    names = set(zipfile.ZipFile(built[".whl"]).namelist())
    for prefix, root in ROOTS.items():
        for source in root.rglob("*"):
            if "__pycache__" in source.parts or source.suffix not in (".py", ".md"):
                continue
            installed = "/".join((*prefix.split("."), *source.relative_to(root).parts))
            assert installed in names, f"{source.relative_to(ROOT)} is not in the wheel as {installed}"
    assert "mua_gym_verifiers.py" in names
    assert "mua_gym/py.typed" in names  # without it, type checkers ignore the package's annotations
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE") for n in names), names


@pytest.mark.slow
def test_twine_check_passes(built):
    out = _run([sys.executable, "-m", "twine", "check", "--strict", str(built[".whl"]), str(built[".tar.gz"])],
               cwd=ROOT)
    assert out.count("PASSED") == 2, out


@pytest.mark.slow
def test_wheel_in_a_fresh_venv_imports_everything_and_plays(built, tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    _run([str(python), "-m", "pip", "install", "-q", str(built[".whl"])], cwd=tmp_path, env=env)
    out = _run([str(python), "-c", IN_VENV], cwd=tmp_path, env=env)
    assert "played mua/Mock-v0, mua/Retail-v0, mua/Airline-v0, mua/Telecom-v0 at reward 1.0" in out, out
    listed = _run([str(venv / "bin" / "mua-gym"), "list"], cwd=tmp_path, env=env)
    for env_id in ("mua/Mock-v0", "mua/Retail-v0", "mua/Airline-v0", "mua/Telecom-v0"):
        assert env_id in listed, listed
    # the README's main job, as its first command runs it (less the editable install)
    job = _run([str(venv / "bin" / "mua-gym"), "run", "--env", "mua/Retail-v0", "--split", "test", "--agent",
                "oracle", "--user", "scripted", "--episodes", "3"], cwd=tmp_path, env=env)
    assert "3 episodes, mean reward 1.000" in job, job[-2000:]
    # one version, wherever it is read
    version = _run([str(python), "-c", "import importlib.metadata as m, mua_gym; "
                    "assert m.version('mua_gym') == mua_gym.__version__; print(mua_gym.__version__)"],
                   cwd=tmp_path, env=env).strip()
    assert _run([str(venv / "bin" / "mua-gym"), "--version"], cwd=tmp_path, env=env).strip() == f"mua-gym {version}"
    _typecheck_against(python, tmp_path, env)


#: A user's script, type-checked against the installed package: the typed info dicts must reach mypy.
USER_SCRIPT = """
import mua_gym
from mua_gym.env.infos import ResetInfo, StepInfo

def turns(info: StepInfo) -> int:
    return info["turn"]

def task(info: ResetInfo) -> str:
    return info["task_id"]
"""
#: The same, wrong: an int read where the dict declares a str, and a key no info dict has.
WRONG_SCRIPT = USER_SCRIPT + """
def wrong(info: ResetInfo) -> int:
    return info["task_id"]

def missing(info: StepInfo) -> object:
    return info["no_such_key"]
"""


def _typecheck_against(python: Path, tmp_path: Path, env: dict[str, str]) -> None:
    """mypy (this interpreter's) on a user's script with the venv's packages (``--python-executable``): the
    installed package's annotations are read (py.typed), so a right script passes and a wrong one fails."""
    (tmp_path / "right.py").write_text(USER_SCRIPT)
    (tmp_path / "wrong.py").write_text(WRONG_SCRIPT)
    mypy = [sys.executable, "-m", "mypy", "--python-executable", str(python), "--no-incremental",
            "--follow-imports=silent", "--ignore-missing-imports"]
    right = subprocess.run([*mypy, "right.py"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert right.returncode == 0, right.stdout + right.stderr
    wrong = subprocess.run([*mypy, "wrong.py"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert '"no_such_key"' in wrong.stdout and "Incompatible return value" in wrong.stdout, wrong.stdout


def test_one_version_everywhere():
    """CITATION.cff and the changelog name the version setup.cfg reads from ``mua_gym.__version__``."""
    import re

    import mua_gym

    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert config["metadata"]["version"] == "attr: mua_gym.__version__"
    cited = re.search(r"^version: (\S+)$", (ROOT / "CITATION.cff").read_text(), re.M)
    assert cited and cited.group(1) == mua_gym.__version__
    assert f"## [{mua_gym.__version__}]" in (ROOT / "CHANGELOG.md").read_text()
    assert "MIT License" in (ROOT / "LICENSE").read_text() and config["metadata"]["license"] == "MIT"
