"""OpenPipe ART: :func:`mua_gym.integrations.art.rollout` drives real ``art`` (0.5.23) in a Python >= 3.12 venv.

ART refuses Python 3.11, so the episode runs in a side venv (``tests/sidevenv.py``: built once, ~4 minutes and
~850 MB, then cached) by ``tests/integrations/art_rollout.py``, against a scripted OpenAI-compatible server on
127.0.0.1 that plays both the agent and an LLM user.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from integrations.readme import readme_block
from sidevenv import find_python, side_venv

SCRIPT = Path(__file__).with_name("art_rollout.py")


@pytest.fixture(scope="module")
def plays(tmp_path_factory) -> dict:
    python = find_python((3, 12))
    if python is None:
        pytest.skip("OpenPipe ART needs Python >= 3.12 and none was found (on PATH as python3.1x or under pyenv)")
    exe = side_venv("art", "art,test", python=python)
    block = tmp_path_factory.mktemp("art") / "readme_block.py"
    block.write_text(readme_block("Train with OpenPipe ART"))
    result = subprocess.run([str(exe), str(SCRIPT), str(block)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_gold_play_scores_one_and_a_play_missing_a_write_scores_zero(plays):
    right, wrong = plays["right"], plays["wrong"]
    assert right["reward"] == 1.0 and right["metadata"]["termination_reason"] == "user_stop"
    assert right["metrics"]["terminated"] is True and right["metrics"]["tool_errors"] == 0
    assert right["metrics"]["tool_calls"] == len(right["gold_calls"])
    assert wrong["reward"] == 0.0 and wrong["metrics"]["terminated"] is True  # it ended normally, and failed


@pytest.mark.slow
def test_only_the_agents_calls_are_captured_with_the_envs_tools(plays):
    for play in (plays["right"], plays["wrong"]):
        seen = play["server_seen"]
        assert seen["user-sim"] >= 2  # the LLM user opened and answered over HTTP...
        assert play["captured_models"] == ["agent-policy"] * seen["agent-policy"]  # ...and none of it was kept
        assert play["captured_tool_sets"] == [play["env_tools"]]
    calls = [name for turn in plays["right"]["captured_tool_calls"] for name in turn]
    assert calls == plays["right"]["gold_calls"]
    assert plays["control_captured"] == 1  # the same user call outside no_capture IS captured


@pytest.mark.slow
def test_a_user_who_never_opens_raises_before_any_model_call_and_art_drops_the_rollout(plays):
    void = plays["void"]
    assert "void (user_error" in void["alone"] and "the user model is down" in void["alone"]
    assert void["agent_calls_alone"] == 0  # nothing was generated for it
    assert void["group_rewards"] == [1.0]  # ART kept the gold play and set the void one aside
    assert void["group_exceptions"] == ["<class 'mua_gym.integrations.art.VoidEpisode'>"]


@pytest.mark.slow
def test_every_call_is_answered_under_its_own_id(plays):
    mending = plays["mending"]
    assert mending["unanswered"] == []  # clashing, missing and text-read ids: each tool message answers a call
    assert mending["refused"] == 257  # an action over the env's call limit: one error per call
    assert mending["reward"] == 1.0 and mending["requests"] > 3


@pytest.mark.slow
def test_the_readme_block_runs_as_written(plays):
    readme = plays["readme"]
    assert readme["reward"] == 1.0  # the oracle's play of the mock task, served as "my-agent"
    assert readme["captured"] == readme["server_seen"]["my-agent"] >= 2


def test_without_art_the_import_fails_in_one_line_naming_the_extra():
    import importlib.util

    from mua_gym.integrations import MissingTrainerError

    if importlib.util.find_spec("art") is not None:
        pytest.skip("art is installed in this python")
    with pytest.raises(MissingTrainerError, match=r'pip install "mua_gym\[art\]"'):
        importlib.import_module("mua_gym.integrations.art")


@pytest.mark.slow
def test_an_episode_void_midway_raises_so_art_drops_it(plays):
    for how, kind in (("fault", "user_fault: invented_fact"), ("error", "user_error: RuntimeError")):
        midway = plays["void"]["midway"][how]
        assert midway["said"].startswith(f"VoidEpisode: {kind}")
        assert midway["agent_calls"] >= 1  # it went void after the agent's turns, not at the opening
