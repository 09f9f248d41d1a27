"""EnvOptions: the env's keywords as one typed model, checked where a config is written."""

import inspect

import pytest

import mua_gym
from mua_gym import AsyncMuaEnv, MuaEnv
from mua_gym.env.options import EnvOptions, check_env_options


def test_the_options_are_the_constructors_keywords_with_its_defaults():
    parameters = {name: p.default for name, p in inspect.signature(AsyncMuaEnv.__init__).parameters.items()
                  if name not in ("self", "domain")}
    fields = {name: field.default for name, field in EnvOptions.model_fields.items()}
    assert fields == parameters


@pytest.mark.parametrize("make", [lambda **kw: mua_gym.make("mua/Mock-v0", **kw),
                                  lambda **kw: mua_gym.make_async("mua/Mock-v0", **kw),
                                  lambda **kw: MuaEnv("mock", **kw)], ids=["make", "make_async", "MuaEnv"])
def test_every_way_to_build_an_env_refuses_a_bad_option_in_one_clear_line_each(make):
    with pytest.raises(ValueError) as refused:
        make(max_turn=5, split="tset", on_user_fault="ignore")
    lines = str(refused.value).splitlines()[1:]
    assert sorted(lines) == [
        "- max_turn: no env takes this keyword (did you mean 'max_turns'?)",
        "- on_user_fault: on_user_fault must be 'flag', 'retry' or 'void', not 'ignore'",
        "- split: split must be train, dev or test, not 'tset' (did you mean 'test'?)"]


def test_values_read_from_text_become_what_the_env_takes():
    env = mua_gym.make("mua/Mock-v0", max_turns="7", render_mode="ansi")
    assert env.unwrapped.core.max_turns == 7 and env.unwrapped.render_mode == "ansi"
    assert check_env_options({"max_turns": "3", "x": 1}, also=("x",)) == {"max_turns": 3, "x": 1}
    with pytest.raises(ValueError, match="max_tool_errors: Input should be greater than or equal to 1"):
        check_env_options({"max_tool_errors": 0})


def test_objects_pass_through_unchecked_and_unchanged():
    tasks = list(mua_gym.get_domain("mock").tasks("train"))[:2]
    checked = check_env_options({"tasks": tasks, "parser": str.strip})
    assert checked["tasks"] is tasks and checked["parser"] is str.strip
