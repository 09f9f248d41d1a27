"""The README's example and the examples/ scripts must keep working."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_commands_are_the_ci_commands():
    readme = (ROOT / "README.md").read_text()
    first_block = re.search(r"```bash\n(.*?)```", readme, re.S).group(1).strip().splitlines()
    assert first_block[0].startswith("python -m pip install -e . && mua-gym run --env mua/Retail-v0")
    assert first_block[1] in (ROOT / ".ci" / "run").read_text()


def test_readme_python_example_runs():
    readme = (ROOT / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "1.0 True user_stop" in result.stdout


def test_example_scripts_run_offline():
    for script, needle in [("hand_stepping.py", "reward: 1.0"), ("llm_agent_loop.py", "reward 0.0")]:
        extra = ["--episodes", "1"] if "llm" in script else []
        result = subprocess.run([sys.executable, str(ROOT / "examples" / script), *extra],
                                capture_output=True, text=True, timeout=180)
        assert result.returncode == 0, result.stderr
        assert needle in result.stdout


def test_the_custom_agent_example_evaluates_and_keeps_its_run(tmp_path):
    out = tmp_path / "run"
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "custom_agent.py"), str(out)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "20 episodes, pass^1 0.150" in result.stdout and (out / "run.json").is_file()


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_of_the_readme_and_docs_reaches_a_file_and_heading():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    checked = 0
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if target.startswith(("http://", "https://")):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            assert file.exists(), f"{page.name} links to {target}, which is missing"
            if anchor:
                headings = re.findall(r"^#+ (.+)$", file.read_text(), re.M)
                assert anchor in {_slug(h) for h in headings}, f"{page.name}: no heading #{anchor} in {file.name}"
            checked += 1
    assert checked > 30


def test_the_readme_quickstart_eval_and_report_run_as_written(tmp_path):
    """The Quickstart's eval block, less its pip line, from a fresh folder: a run folder and its report."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### Evaluate an agent"):]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    commands = [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()
                and not line.startswith("pip ")]
    assert commands[0].startswith("mua-gym eval") and commands[1].startswith("mua-gym report")
    for command in commands:
        done = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "runs" / "fair" / "report.html").stat().st_size > 10_000
