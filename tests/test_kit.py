"""The domain kit: what the built-in domains' generators and task makers share."""

import os
import subprocess
import sys

import numpy as np
import pytest

from mua_gym.kit import deferred
from mua_gym.kit.maker import TaskMaker, draw_intents, generated_world, read_world
from mua_gym.domain.registry import get_domain
from mua_gym.kit.generation import Intent


def test_a_deferred_function_imports_its_module_on_first_call_only():
    code = ("import sys\nfrom mua_gym.domain.registry import get_domain\nd = get_domain('retail')\n"
            "print('mua_gym.domains.retail.generate' in sys.modules)\n"
            "d.image()\nprint('mua_gym.domains.retail.generate' in sys.modules)\n")
    env = {**os.environ, "MUA_GYM_CACHE": "off"}  # (a cached image needs no generator at all)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env).stdout.split()
    assert out == ["False", "True"]
    join = deferred("os.path:join")
    assert join.__name__ == "join" and join("a", "b") == "a/b"
    with pytest.raises(ModuleNotFoundError):
        deferred("no_such_module_here:f")()


class Maker(TaskMaker):
    def ask(self) -> Intent | None:
        return Intent("ask", f"Question {self.pick(['a', 'b'])}.", [])

    def never(self) -> Intent | None:
        return None

    def refusal(self) -> Intent | None:
        return Intent("refusal", "Do what I may not.", [])


def test_draw_intents_draws_a_level_of_kinds_and_ends_level_three_on_a_refusal():
    makers = {"ask": Maker.ask, "never": Maker.never, "refusal": Maker.refusal}
    drawn = draw_intents(Maker(np.random.default_rng(0)), 3, makers, ["ask"])
    assert [i.category for i in drawn] == ["ask", "ask", "refusal"]
    assert [i.category for i in draw_intents(Maker(np.random.default_rng(0)), 2, makers, ["ask"])] == ["ask", "ask"]
    assert draw_intents(Maker(np.random.default_rng(0)), 1, makers, ["never"]) is None  # nothing for this user
    same = [[i.says for i in draw_intents(Maker(np.random.default_rng(7)), 2, makers, ["ask"])] for _ in range(2)]
    assert same[0] == same[1]  # the seed decides every draw


def test_draw_intents_draws_another_kind_for_one_with_nothing_and_ends_long_tasks_on_a_closing_kind():
    makers = {"ask": Maker.ask, "never": Maker.never, "refusal": Maker.refusal}
    drawn = draw_intents(Maker(np.random.default_rng(1)), 1, makers, ["never", "ask"])
    assert [i.category for i in drawn] == ["ask"]  # "never" has nothing: another kind is drawn
    long = draw_intents(Maker(np.random.default_rng(2)), 4, makers, ["ask"], last=("never", "refusal"), count=6)
    assert [i.category for i in long] == ["ask"] * 5 + ["refusal"]


def test_levels_keep_their_weights_and_a_level_outside_them_is_refused():
    from mua_gym.domains.retail.taskgen import LEVELS, generated_tasks

    retail = get_domain("retail")
    tasks = generated_tasks(retail, "dev", count=140)
    share = {level: sum(t.difficulty == level for t in tasks) / len(tasks) for level in set(LEVELS)}
    for level in set(LEVELS):  # drawn 3:2:1:1, kept although long tasks fail to be made more often
        assert abs(share[level] - LEVELS.count(level) / len(LEVELS)) < 0.12, share
    assert {t.difficulty for t in generated_tasks(retail, "dev", count=5, difficulty=4)} == {4}
    with pytest.raises(ValueError, match="difficulty must be one of 1, 2, 3, 4"):
        generated_tasks(retail, "dev", count=5, difficulty=5)


def test_a_task_makers_world_is_the_generated_one_read_once_per_split():
    assert generated_world(3).params == {} and generated_world(3, "small").params == {"size": "small"}
    assert generated_world(3, "small", "tau2").params == {}  # a fixed world has no size
    retail = get_domain("retail")
    count = read_world(retail, generated_world(0), lambda w: w.raw.execute("SELECT COUNT(*) FROM users").fetchone()[0])
    assert count == retail.new_world().raw.execute("SELECT COUNT(*) FROM users").fetchone()[0] > 0
