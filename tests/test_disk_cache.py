"""The disk cache of generated tasks and world images: what a new process reads back is what it would have built."""

from __future__ import annotations

import dataclasses
import functools
import multiprocessing
import os
import subprocess
import sys

import pytest

import mua_gym
from mua_gym.domain import disk_cache
from mua_gym.env.episode import prepare_task


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("MUA_GYM_CACHE", str(folder))
    return folder


def fresh(name: str, calls: list[str] | None = None) -> mua_gym.Domain:
    """The domain as a new process has it: nothing built yet. With ``calls``, its generated task source and
    world builder note each call there (under the same names, so the cache's key is the same)."""
    domain = mua_gym.get_domain(name)
    if calls is None:
        return dataclasses.replace(domain)

    def counted(kind, function):
        @functools.wraps(function)
        def call(*args, **kwargs):
            calls.append(kind)
            return function(*args, **kwargs)
        return call

    return dataclasses.replace(
        domain, task_sources={**domain.task_sources, "generated": counted("tasks", domain.task_sources["generated"])},
        worlds={**domain.worlds, "generated": counted("world", domain.worlds["generated"])})


@pytest.mark.parametrize("name", ["retail", "airline", "telecom", "mock"])
def test_a_new_process_reads_back_what_it_would_build(name, cache):
    built_calls: list[str] = []
    built = fresh(name, built_calls)
    tasks, image = built.tasks("dev"), built.image()
    assert built_calls == ["tasks", "world"]
    assert len(list(cache.iterdir())) == 2

    read_calls: list[str] = []
    read = fresh(name, read_calls)
    again, image_again = read.tasks("dev"), read.image()
    assert read_calls == []  # nothing generated, nothing built
    assert again == tasks and [t.model_dump() for t in again] == [t.model_dump() for t in tasks]
    assert (image_again.data, image_again.hash) == (image.data, image.hash)
    assert isinstance(again, disk_cache.CachedTasks) and again.stats == getattr(tasks, "stats", None)
    assert again[1:3] == tasks[1:3] and again[-1] == tasks[-1] and list(again) == list(tasks)
    # An episode on what was read back: the gold world and the oracle's reward are what they were.
    assert prepare_task(read, again[0]).gold_hash == prepare_task(built, tasks[0]).gold_hash


NEW_PROCESS = """
import sys
import mua_gym
from mua_gym.kit import generation as taskgen
from mua_gym.world import image
from mua_gym.eval.agents import OracleAgent

if sys.argv[1] == "read":  # nothing may be generated or built: both come from the cache
    def refuse(*args, **kwargs):
        raise AssertionError("built again")
    taskgen.check_task = image.WorldImage.build = refuse
env = mua_gym.make("mua/Retail-v0", split="dev")
task = env.unwrapped.core.tasks()[5]
agent = OracleAgent(task)
obs, info = env.reset(options={"task": task})
agent.reset(info)
done = False
while not done:
    obs, reward, terminated, truncated, info = env.step(agent.act(obs))
    done = terminated or truncated
print("reward", reward)
"""


def test_a_new_process_plays_an_episode_from_the_cache(cache):
    env = {**os.environ, "MUA_GYM_CACHE": str(cache)}
    for mode in ("fill", "read"):
        done = subprocess.run([sys.executable, "-c", NEW_PROCESS, mode], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split()[-2:] == ["reward", "1.0"]


def test_parameters_and_splits_are_separate_entries(cache):
    domain = fresh("mock")
    assert domain.tasks("train") != domain.tasks("dev")
    domain.image(mua_gym.task.WorldSpec(seed=1))
    domain.image(mua_gym.task.WorldSpec(seed=2))
    assert len(list(cache.iterdir())) == 4


def test_a_damaged_entry_is_rebuilt(cache):
    tasks = fresh("mock").tasks("dev")
    (entry,) = cache.iterdir()
    entry.write_bytes(entry.read_bytes()[:-40])  # cut short, as by a full disk
    calls: list[str] = []
    assert fresh("mock", calls).tasks("dev") == tasks and calls == ["tasks"]
    calls.clear()
    assert fresh("mock", calls).tasks("dev") == tasks and calls == []  # and written whole again


def test_off_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("MUA_GYM_CACHE", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert disk_cache.cache_folder() is None
    calls: list[str] = []
    fresh("mock", calls).tasks("dev")
    fresh("mock", calls).tasks("dev")
    assert calls == ["tasks", "tasks"] and list(tmp_path.iterdir()) == []


def test_the_default_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("MUA_GYM_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert disk_cache.cache_folder() == tmp_path / "mua_gym"


def test_the_key_follows_the_code(tmp_path, monkeypatch):
    package = tmp_path / "mua_pkg_under_test"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "generate.py").write_text("SIZE = 1\n")
    (tmp_path / "mua_single_module.py").write_text("SIZE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(disk_cache, "_digests", {})
    before = disk_cache.code_digest("mua_pkg_under_test.generate"), disk_cache.code_digest("mua_single_module")
    (package / "__init__.py").write_text("# another file of the package changed\n")
    (tmp_path / "mua_single_module.py").write_text("SIZE = 2\n")
    monkeypatch.setattr(disk_cache, "_digests", {})
    after = disk_cache.code_digest("mua_pkg_under_test.generate"), disk_cache.code_digest("mua_single_module")
    assert before[0] != after[0] and before[1] != after[1]
    assert "mua_pkg_under_test.generate" not in sys.modules  # found without importing it (only its package)
    sys.modules.pop("mua_pkg_under_test", None)


def _write_many(path: str, marker: int) -> None:
    for i in range(40):
        disk_cache._write(disk_cache.Path(path), bytes([marker]) * 200_000 + str(i).encode())


def test_concurrent_writers_never_leave_half_an_entry(tmp_path):
    path = tmp_path / "entry.pkl"
    disk_cache._write(path, b"\x00" * 200_000)
    context = multiprocessing.get_context("fork")
    writers = [context.Process(target=_write_many, args=(str(path), k)) for k in (1, 2, 3)]
    for w in writers:
        w.start()
    reads = 0
    while any(w.is_alive() for w in writers) or reads < 50:
        payload = disk_cache._read(path)
        assert payload is not None and len(set(payload[:200_000])) == 1
        reads += 1
    for w in writers:
        w.join()
        assert w.exitcode == 0
    assert [p.name for p in tmp_path.iterdir()] == ["entry.pkl"]  # no temporary file left behind


def test_the_command_line_shows_and_clears_it(cache):
    fresh("mock").tasks("dev")
    env = {**os.environ, "MUA_GYM_CACHE": str(cache)}
    shown = subprocess.run([sys.executable, "-m", "mua_gym.cli", "cache"], capture_output=True, text=True, env=env)
    assert shown.returncode == 0 and f"{cache}: 1 entries" in shown.stdout
    cleared = subprocess.run([sys.executable, "-m", "mua_gym.cli", "cache", "--clear"], capture_output=True,
                             text=True, env=env)
    assert cleared.returncode == 0 and "1 files removed" in cleared.stdout
    assert list(cache.iterdir()) == []


def test_only_named_module_functions_are_cached(cache):
    def nested(domain, split):
        return mua_gym.get_domain("mock").task_sources["generated"](domain, split)

    mock = mua_gym.get_domain("mock")
    expected = list(mock.tasks("dev"))
    disk_cache.clear(cache)
    for source in (nested, lambda domain, split: nested(domain, split)):
        assert disk_cache.entry("tasks", "mock", "generated", source, ("dev",)) is None
        assert dataclasses.replace(mock, task_sources={"generated": source}).tasks("dev") == expected
    assert not cache.exists() or list(cache.iterdir()) == []
    script = "from mua_gym.domain import disk_cache; print(disk_cache.code_digest('__main__'))"
    assert subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True).stdout.split() == ["None"]  # a script's or a notebook's own functions
    assert disk_cache.code_digest("no_such_module_anywhere") is None


def test_tasks_are_cached_per_world_builder(cache):
    mock = mua_gym.get_domain("mock")
    before = disk_cache.entry("tasks", "mock", "generated", mock.task_sources["generated"], ("dev",))
    assert before is not None
    fresh("mock").tasks("dev")
    built = dataclasses.replace(mock, worlds={"generated": lambda conn, *, seed: None})
    calls: list[str] = []
    counted = fresh("mock", calls)
    counted = dataclasses.replace(counted, worlds=built.worlds)
    counted.tasks("dev")
    assert calls == ["tasks"]  # another world (and one that cannot be cached): the tasks are made again
