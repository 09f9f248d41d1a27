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
