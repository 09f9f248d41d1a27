"""Virtual environments for trainers that cannot share the test environment.

OpenEnv (through fastmcp, mcp < 2) and verifiers (mcp == 2.0) cannot be installed together, and ART needs
Python >= 3.12. Their tests run in a venv of their own, built once from this checkout's extras and cached
(under ``$MUA_GYM_TEST_VENVS``, default ``~/.cache/mua_gym/test-venvs``) keyed by the extras, setup.cfg and
the interpreter.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def find_python(minimum: tuple[int, int]) -> str | None:
    """An interpreter of at least ``minimum`` on this machine (on PATH or under pyenv), or None."""
    names = [f"python{minimum[0]}.{m}" for m in range(minimum[1], minimum[1] + 4)]
    candidates = [shutil.which(n) for n in names]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if pyenv.is_dir():
        candidates += [str(p / "bin" / "python") for p in sorted(pyenv.iterdir())]
    for path in filter(None, candidates):
        try:
            out = subprocess.run([path, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                                 text=True, timeout=30).stdout.split()
        except (OSError, subprocess.TimeoutExpired):
            continue
        if len(out) == 2 and (int(out[0]), int(out[1])) >= minimum:
            return path
    return None


def side_venv(name: str, extras: str, python: str = "python3", timeout: float = 1200) -> Path:
    """The python of a venv holding this checkout (editable) with ``extras``; built on first use.

    Raises RuntimeError with pip's last lines when the install fails.
    """
    key = hashlib.sha256()
    key.update((ROOT / "setup.cfg").read_bytes())
    key.update(extras.encode())
    key.update(subprocess.run([python, "-c", "import sys; print(sys.version)"], capture_output=True,
                              text=True, check=True).stdout.encode())
    home = Path(os.environ.get("MUA_GYM_TEST_VENVS", Path.home() / ".cache" / "mua_gym" / "test-venvs"))
    venv = home / f"{name}-{key.hexdigest()[:12]}"
    exe = venv / "bin" / "python"
    if (venv / ".complete").exists():
        # the editable install points at the checkout that built it: repoint it at this one (no resolve)
        if not _points_at(venv, ROOT):
            subprocess.run([str(exe), "-m", "pip", "install", "-q", "--no-deps", "-e", str(ROOT)], check=True,
                           capture_output=True, timeout=timeout)
        return exe
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300)
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    result = subprocess.run([str(exe), "-m", "pip", "install", "-q", "-e", f"{ROOT}[{extras}]"],
                            capture_output=True, text=True, timeout=timeout, env=env)
    if result.returncode != 0:
        lines = [line for line in (result.stdout + result.stderr).splitlines() if "Location" not in line]
        raise RuntimeError(f"pip could not build the {name} venv:\n" + "\n".join(lines[-15:]))
    (venv / ".complete").write_text("ok\n")
    return exe


def _points_at(venv: Path, root: Path) -> bool:
    """Whether the venv's editable install of mua_gym maps to ``root`` (setuptools' finder names the folders)."""
    finders = list(venv.glob("lib/python*/site-packages/__editable___mua_gym_*_finder.py"))
    return bool(finders) and all(f"'{root / 'mua_gym'}'" in f.read_text() for f in finders)
