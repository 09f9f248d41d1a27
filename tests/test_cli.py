import json
import subprocess
import sys

from mua_gym.cli import main


def test_cli_runs_oracle_episodes(capsys, tmp_path):
    out = tmp_path / "t.jsonl"
    assert main(["run", "--env", "mua/Mock-v0", "--agent", "oracle", "--user", "scripted", "--episodes", "4",
                 "--jsonl", str(out)]) == 0
    text = capsys.readouterr().out
    assert "[user]" in text and "-- ended: user_stop; reward 1.0" in text
    assert "4 episodes, mean reward 1.000" in text
    lines = out.read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(line)["reward"] == 1.0 for line in lines)


def test_cli_random_agent_and_list(capsys):
    assert main(["run", "--agent", "random", "--episodes", "2", "--quiet", "--max-turns", "5"]) == 0
    assert "2 episodes" in capsys.readouterr().out
    assert main(["list"]) == 0
    assert "mua/Mock-v0" in capsys.readouterr().out


def test_console_script_is_installed():
    result = subprocess.run([sys.executable, "-m", "mua_gym.cli", "run", "--episodes", "1", "--quiet"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "mean reward 1.000" in result.stdout
