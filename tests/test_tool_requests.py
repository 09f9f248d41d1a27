"""The generic request reader, on vocabularies a third party might write badly."""

import pytest

from mua_gym.domain import Setting, UserVocabulary
from mua_gym.user_sims.tool_requests import reader_for

TOOLS = frozenset({"check_fan", "toggle_fan", "fan_off"})


def test_a_topic_that_matches_nothing_at_all_is_read_and_the_step_moves_on():
    """A topic that can match the empty string used to find the same empty match forever."""
    words = UserVocabulary((Setting("fan", r"(?:fan)?", "check_fan", ("check the fan",), toggle="toggle_fan",
                                    state=r"fan is (on|off)"),))
    reader = reader_for(words)
    for text in ("", "hello there", "please do it.", "x" * 10_000, "please check the fan."):
        reader.request_in_words(text, TOOLS)  # returns (the old loop never did)
    request = reader.request_in_words("please check the fan.", TOOLS)
    assert request is not None and [name for name, _ in request.calls] == ["check_fan"]


@pytest.mark.parametrize("setting, error", [
    (dict(key="fan", topic="fan", read=None, examples=()), "names no user tool"),
    (dict(key="fan", topic="fan", read=None, examples=(), toggle="toggle_fan"), "needs the read tool"),
    (dict(key="fan", topic="fan", read=None, examples=(), off_tool="fan_off"), "needs the read tool"),
])
def test_a_setting_that_cannot_be_acted_on_is_refused_when_declared(setting, error):
    with pytest.raises(ValueError, match=error):
        Setting(**setting)


def test_a_state_pattern_without_a_group_is_refused_when_read_not_mid_episode():
    words = UserVocabulary((Setting("fan", "fan", "check_fan", (), toggle="toggle_fan", state=r"fan is on"),))
    with pytest.raises(ValueError, match="state pattern of setting 'fan'"):
        reader_for(words)


def test_a_setting_with_only_an_off_tool_is_a_switch():
    setting = Setting("fan", "fan", "check_fan", ("turn the fan off",), off_tool="fan_off", state=r"fan is (on|off)")
    words = UserVocabulary((setting,))
    assert setting.switch and words.fix_requests() == ("turn the fan off",)
    request = reader_for(words).request_in_words("please turn the fan off.", frozenset({"check_fan", "fan_off"}))
    assert request is not None and request.calls == (("fan_off", {}),)  # acted on, not only checked
