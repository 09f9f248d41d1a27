"""The example notebook runs top to bottom in a real Jupyter kernel, and its HTML views reach the page."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium
import pytest

import mua_gym

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "notebook.ipynb"


def _tagged(notebook, tag):
    (cell,) = [c for c in notebook.cells if tag in c.get("metadata", {}).get("tags", [])]
    return cell


@pytest.mark.slow
def test_the_example_notebook_runs_in_a_kernel_and_shows_the_html_views(tmp_path):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(notebook, timeout=240, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if o.output_type == "stream" and o.name == "stderr" and "Traceback" in o.text]
    env_view = _tagged(notebook, "env-view").outputs[0]["data"]["text/html"]
    assert "MuaEnv(retail, user=scenario)" in env_view and "retail-test-0-00170" in env_view
    assert "DB" in env_view and "modify_pending_order_address" in env_view  # the breakdown and the transcript
    trajectory_view = _tagged(notebook, "trajectory-view").outputs[0]["data"]["text/html"]
    assert "mock" in trajectory_view and "Could you tell me the email on your account?" in trajectory_view
    printed = "".join(o.text for o in _tagged(notebook, "eval").outputs if o.output_type == "stream")
    assert "episodes; pass^k {1: " in printed and re.search(r"mua/Retail-v0 \w+: pass\^1 \d", printed)
    assert (tmp_path / "runs" / "notebook-fair" / "episodes.jsonl").exists()  # the eval wrote where it was told


def test_a_made_env_shows_its_html_view_to_ipython_and_still_enforces_reset_first():
    formatter = pytest.importorskip("IPython.core.formatters").HTMLFormatter()
    env = gymnasium.make("mua/Mock-v0")
    with pytest.raises(gymnasium.error.ResetNeeded):
        env.step("hello")
    assert "no episode yet" in formatter(env)
    env.reset(options={"task_id": "mock-cancel-card"})
    env.step({"name": "find_customer_by_email", "arguments": {"email": "ana@example.com"}})
    view = formatter(mua_gym.make("mua/Mock-v0")) and formatter(env)
    assert "MuaEnv(mock, user=scenario)" in view and "find_customer_by_email" in view and "ana@example.com" in view
