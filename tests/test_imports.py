"""No import cycle among mua_gym's modules, the mapped ``domains/`` and ``user_sims/`` packages included.

Every import counts, at module level or inside a function (a lazy import that closes a loop is still a loop).
Those under ``if TYPE_CHECKING:`` never run, and are checked apart: a loop of them is a loop in the design.
"""

from __future__ import annotations

import ast
import configparser
import importlib
import importlib.util
import pkgutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def package_modules() -> dict[str, str]:
    """Every module of the packages setup.cfg installs (its package_dir mapping applied), name -> file."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    found: dict[str, str] = {}
    for package in config["options"]["packages"].split():
        module = importlib.import_module(package)
        found[package] = module.__file__
        for info in pkgutil.iter_modules(module.__path__, package + "."):
            if not info.ispkg:
                found[info.name] = importlib.util.find_spec(info.name).origin
    return found


def _type_only(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(inner) for inner in ast.walk(node)}
    return skipped


def imports_of(name: str, path: str, modules: dict[str, str], type_only: bool = False) -> set[str]:
    """The modules of ``modules`` that ``name`` (the file at ``path``) imports, anywhere but TYPE_CHECKING (with
    ``type_only``, there too)."""
    tree = ast.parse(Path(path).read_text())
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    skipped = set() if type_only else _type_only(tree)
    targets: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {t for t in targets if t in modules and t != name}


def cycles(modules: dict[str, str], type_only: bool = False) -> list[list[str]]:
    """The groups of two or more modules that import each other round a loop (Tarjan's strongly connected
    components), each sorted; with ``type_only``, imports for type checkers count too."""
    graph = {name: imports_of(name, path, modules, type_only) for name, path in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []
    for start in graph:  # iterative, so a deep chain cannot hit the recursion limit
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_no_module_of_the_package_imports_itself_round_a_loop():
    modules = package_modules()
    assert {"mua_gym.world", "mua_gym.user_sims.llm", "mua_gym.domains.telecom.phone"} <= set(modules)
    assert cycles(modules) == []


def test_nor_round_a_loop_of_imports_made_for_type_checkers():
    assert cycles(package_modules(), type_only=True) == []


def test_the_walker_finds_a_loop_through_a_lazy_import_and_skips_a_type_only_one(tmp_path):
    files = {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg import b\n",
        "pkg/b.py": "def f():\n    from pkg.c import g\n",
        "pkg/c.py": "from . import a\n",
        "pkg/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.e import E\n",
        "pkg/e.py": "import pkg.d\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    modules = {name[:-3].replace("/", ".").removesuffix(".__init__"): str(tmp_path / name) for name in files}
    assert cycles(modules) == [["pkg.a", "pkg.b", "pkg.c"]]
    assert cycles(modules, type_only=True) == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.d", "pkg.e"]]


def test_a_moved_module_imports_at_its_old_path_with_a_warning(tmp_path):
    """Each old path of :data:`mua_gym.moved.MOVED` gives the very module at its new path, warned, in a fresh
    interpreter (nothing imported before it)."""
    import json
    import subprocess
    import sys

    from mua_gym.moved import MOVED

    script = (
        "import importlib, json, sys, warnings\n"
        "import mua_gym\n"
        "out = {}\n"
        f"for old, new in {sorted(MOVED.items())!r}:\n"
        "    with warnings.catch_warnings(record=True) as caught:\n"
        "        warnings.simplefilter('always')\n"
        "        module = importlib.import_module(old)\n"
        "    out[old] = [module is importlib.import_module(new), module.__name__, module.__spec__.name,\n"
        "                [str(w.message) for w in caught if w.category is DeprecationWarning]]\n"
        "print(json.dumps(out))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for old, (same, name, spec, warned) in json.loads(result.stdout).items():
        assert same and name == spec == MOVED[old], old  # the module keeps its own name and spec
        assert warned == [f"{old} moved to {MOVED[old]}; the old path goes in mua_gym 0.2"], old
    assert not (ROOT / "mua_gym" / "judge.py").exists()  # a moved module left no file at the root


#: The layers above the runtime: they may import it, never the other way round.
ABOVE_THE_RUNTIME = ("mua_gym.eval", "mua_gym.integrations", "mua_gym.cli")


def test_nothing_in_the_runtime_imports_evaluation_trainers_or_the_command_line():
    modules = package_modules()
    upward = sorted((name, target) for name, path in modules.items() if not name.startswith(ABOVE_THE_RUNTIME)
                    for target in imports_of(name, path, modules, type_only=True)
                    if target.startswith(ABOVE_THE_RUNTIME))
    assert upward == []


def test_only_domains_and_the_layers_above_use_the_domain_kit():
    """The kit (generators' mechanics, composing and verifying tasks, fairness) serves domains: the runtime works
    on any domain without it."""
    modules = package_modules()
    users = ("mua_gym.kit", "mua_gym.domains") + ABOVE_THE_RUNTIME
    found = sorted((name, target) for name, path in modules.items() if not name.startswith(users)
                   for target in imports_of(name, path, modules, type_only=True) if target.startswith("mua_gym.kit"))
    assert found == []


def test_the_split_phone_requests_module_resolves_its_old_names_with_a_warning():
    """Its reading moved to user_sims.tool_requests and telecom's words to the telecom domain: each old name
    still resolves (the readers with their old signatures, on telecom's words), warned, for one release."""
    import warnings

    from mua_gym.domains.telecom.user_requests import SETTINGS
    from mua_gym.user_sims import phone_requests, tool_requests

    tools = frozenset({"check_network_status", "toggle_airplane_mode"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert phone_requests.SETTINGS is SETTINGS and phone_requests.PhoneRequest is tool_requests.ToolRequest
        request = phone_requests.request_in_words("please turn off airplane mode.", tools)
        assert phone_requests.switch_state(request.setting, "Airplane Mode: ON") is True
    assert request.setting.key == "airplane" and request.want is False
    assert [w.category for w in caught] == [DeprecationWarning] * 4
    assert "moved to mua_gym.domains.telecom.user_requests.SETTINGS" in str(caught[0].message)
