"""mua-gym report and the episode HTML view, read as text: the figures, the transcripts, escaping, partial runs,
self-containment and determinism (tests/test_report_browser.py opens the page in a real browser)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from html import escape
from html.parser import HTMLParser
from pathlib import Path

import pytest

import mua_gym
from mua_gym.eval.evaluate import EvalConfig, evaluate, read_run
from mua_gym.env.html_view import trajectory_html
from mua_gym.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from mua_gym.eval.report import write_report
from mua_gym.env.trajectory import Trajectory, TrajectoryEntry

MOCK, RETAIL = "mua/Mock-v0", "mua/Retail-v0"
SCRIPT = "<script>window.mua_pwned=1</script>"


def _copy(folder: Path, to: Path) -> Path:
    """The run's files only (an earlier test may have written its report there)."""
    shutil.copytree(folder, to, ignore=shutil.ignore_patterns("report.html"))
    return to


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """A real run that fails some episodes: the fair agent on Retail with the scripted user, who says its lines in
    order whatever is asked (the fair agent fails two 'multi' tasks), and Mock."""
    folder = tmp_path_factory.mktemp("mixed")
    evaluate(EvalConfig(env_ids=[RETAIL, MOCK], agent="fair", user="scripted", trials=2, num_tasks=8), out=folder)
    return folder


def _sections(page: str) -> dict[str, str]:
    """Each episode's section of the page, by its anchor."""
    return dict(re.findall(r'<section class="mua-sec mua-ep" id="([^"]+)">(.*?)</section>', page, flags=re.S))


def _row(page: str, key: str) -> dict[int, str]:
    row = re.search(rf'<tr data-row="{re.escape(key)}">(.*?)</tr>', page).group(1)
    return {int(k): v for k, v in re.findall(r'data-k="(\d+)">([^<]+)<', row)}


def _rewrite(folder: Path, edit) -> None:
    lines = [json.loads(x) for x in (folder / "episodes.jsonl").read_text().splitlines() if x.strip()]
    (folder / "episodes.jsonl").write_text("".join(json.dumps(x) + "\n" for x in edit(lines)))


def test_pass_hat_k_is_printed_right_for_known_outcomes(tmp_path):
    evaluate(EvalConfig(env_ids=[MOCK], agent="oracle", trials=3, num_tasks=4), out=tmp_path)
    tasks = sorted({r.task_id for r in read_run(tmp_path).results})
    wins = dict(zip(tasks, (3, 2, 1, 0)))  # successes per task, by trial order

    def lose(lines):
        for x in lines:
            if x["trial"] >= wins[x["task_id"]]:
                x.update(reward=0.0, success=False)
        return lines

    _rewrite(tmp_path, lose)
    page = write_report(tmp_path).read_text()
    expected = {k: sum(math.comb(c, k) for c in wins.values()) / math.comb(3, k) / 4 for k in (1, 2, 3)}
    assert expected == {1: 0.5, 2: pytest.approx(1 / 3), 3: 0.25}
    for key in ("overall", f"env:{MOCK}"):
        assert _row(page, key) == {k: f"{v:.3f}" for k, v in expected.items()}
    assert re.search(rf">{re.escape(tasks[1])}</a></td><td>[^<]*</td><td class='mua-num'>2/3</td>", page)
    cells = re.findall(r'<a class="mua-cell mua-c-(\w)" href="#ep-', page)
    assert cells.count("p") == 6 and cells.count("f") == 6 and len(cells) == 12
    assert "pass^3" in page and "<b>0.500</b><span>pass^1</span>" in page


def test_every_episode_has_its_transcript_and_a_failure_shows_its_diff(mixed):
    run = read_run(mixed)
    page = write_report(mixed).read_text()
    sections = _sections(page)
    assert len(sections) == len(run.results) == 2 * (8 + len({r.task_id for r in run.results if r.env_id == MOCK}))
    by_key = {}
    for anchor, html in sections.items():
        key = re.search(r"(mua/[\w-]+) &middot; trial (\d+)", html)
        task = re.search(r"<h3>[^<]*&middot; <code>([^<]+)</code></h3>", html).group(1)
        by_key[(key.group(1), task, int(key.group(2)))] = html
    assert set(by_key) == {r.key for r in run.results}
    for r in run.results:
        html = by_key[r.key]
        trajectory = run.trajectory(r)
        first_user = next(e.message.content for e in trajectory.entries if e.message.role == "user")
        assert escape(first_user) in html
        assert html.count('<div class="mua-msg') + html.count('<details class="mua-msg') == len(trajectory.entries)
        assert run.envs[r.env_id].policy[:300] not in html  # the policy is shown once per env, not per episode
        if r.success:
            assert "matches gold" in html
    failed = [r for r in run.results if not r.success]
    assert failed and len(failed) == 2 * len({r.task_id for r in failed})  # the scripted user: the same each trial
    diffs = 0
    for r in failed:
        html, diff = by_key[r.key], run.trajectory(r).reward_info["db_diff"]["tables"]
        assert ("matches gold" in html) == (not diff)  # (a failure may write the gold rows and miss an answer)
        diffs += bool(diff)
        for table, changes in diff.items():
            assert f"table <code>{table}</code>" in html
            for row in changes["updated"]:
                for column in row["changed"]:
                    before, after = _shown(row["before"][column]), _shown(row["after"][column])
                    assert f"<td>{column}</td><td class='mua-was'><code>{before}</code>" in html
                    assert f"<td class='mua-gold'><code>{after}</code>" in html
    assert diffs > 0  # a failure that wrote the wrong rows shows them
    assert page.count(escape(run.envs[RETAIL].policy[:300])) == 1
    category = {t.id: t.category for t in mua_gym.get_domain("retail").tasks("test")}
    multi = [r for r in run.results if r.env_id == RETAIL and category[r.task_id] == "multi"]
    assert _row(page, f"category:{RETAIL} multi")[1] == f"{sum(r.success for r in multi) / len(multi):.3f}"


def _shown(value) -> str:
    return escape(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True))


def _hostile() -> Trajectory:
    call = ToolCall.make("c1", "lookup", {"q": SCRIPT})
    hidden = ToolCall.make("u1", "toggle_airplane_mode", {})
    entries = [
        TrajectoryEntry(message=SystemMessage(content="policy " + SCRIPT), trainable=False),
        TrajectoryEntry(message=UserMessage(content="hi " + SCRIPT), trainable=False),
        TrajectoryEntry(message=AssistantMessage(content="<b>bold</b>", tool_calls=[call]), trainable=True),
        TrajectoryEntry(message=ToolMessage(tool_call_id="c1", name="lookup", content=SCRIPT, error=True),
                        trainable=False),
        TrajectoryEntry(message=UserMessage(content="", tool_calls=[hidden]), trainable=False, visible_to_agent=False),
        TrajectoryEntry(message=ToolMessage(tool_call_id="u1", name="toggle_airplane_mode", content="Airplane ON",
                                            requestor="user"), trainable=False, visible_to_agent=False),
    ]
    diff = {"tables": {"orders": {"inserted": [], "deleted": [], "updated": [
        {"key": {"id": "o1"}, "before": {"note": SCRIPT}, "after": {"note": "ok"}, "changed": ["note"]}]}}}
    info = {"reward": 0.0, "components": {"DB": 0.0, "COMMUNICATE": 1.0, "NL_ASSERTION": None},
            "partial_credit": 0.0, "db_diff": diff, "gold_rows_changed": 1, "rows_reproduced": 0,
            "extra_rows_changed": 1, "communicate_missing": [SCRIPT], "actions_missing": ["refund"],
            "env_assertions_failed": [], "nl_assertions": None, "judge_error": "JudgeError: " + SCRIPT}
    return Trajectory(task_id="t<1>", domain="telecom", seed=7, user="scenario", entries=entries, reward=0.0,
                      reward_info=info, terminated=True, termination_reason="user_stop", turns=2, tool_calls=1,
                      tool_errors=1, user_tool_calls=1)


def test_the_episode_view_escapes_everything_and_marks_what_the_agent_never_saw():
    trajectory = _hostile()
    html = trajectory_html(trajectory)
    assert "<script" not in html and "<b>bold" not in html and "t<1>" not in html
    # policy, user message, call arguments, tool result, diff value, missing information, judge error
    assert html.count("&lt;script&gt;window.mua_pwned=1&lt;/script&gt;") == 7
    assert "&lt;b&gt;bold&lt;/b&gt;" in html and "t&lt;1&gt;" in html
    assert '"q": "&lt;script&gt;' in html.replace("&quot;", '"')  # the arguments, indented JSON
    blocks = re.split(r'<(?:div|details) class="mua-msg', html)[1:]
    assert len(blocks) == len(trajectory.entries)
    assert ["hidden from agent" in b for b in blocks] == [e.visible_to_agent is False for e in trajectory.entries]
    assert "toggle_airplane_mode" in blocks[4] and "the user&#x27;s call" in blocks[5]
    assert '<details class="mua-msg mua-system"><summary>' in html  # the policy collapsed
    assert "not judged" in html and "fail" in html and "Expected actions never called" in html
    assert "Judge error" in html and "matches gold" not in html
    assert trajectory._repr_html_() == html
    # a results file is shared and may be edited: its figures are escaped too, and a non-number is no crash
    edited = trajectory.model_copy(update={"reward_info": {**trajectory.reward_info, "rows_reproduced": SCRIPT,
                                                           "gold_rows_changed": SCRIPT, "partial_credit": SCRIPT}})
    assert "<script" not in trajectory_html(edited)
    linked = trajectory_html(trajectory, style=False, policy_href="#policy-x")
    assert "<style>" not in linked and 'href="#policy-x"' in linked and "policy &lt;script" not in linked


def test_a_partial_run_reports_what_it_holds(mixed, tmp_path):
    folder = _copy(mixed, tmp_path / "run")
    _rewrite(folder, lambda lines: [x for x in lines if not (x["env_id"] == MOCK and x["trial"] == 1)])
    with open(folder / "episodes.jsonl", "a") as f:
        f.write('{"env_id": "mua/Mock-v0", "task_id": "half')  # a line still being written
    out = write_report(folder, tmp_path / "partial.html")
    assert out == tmp_path / "partial.html" and not (folder / "report.html").exists()
    page = out.read_text()
    mock_tasks = len({r.task_id for r in read_run(folder).results if r.env_id == MOCK})
    assert f"Partial run: {mock_tasks} of " in page and page.count('title="not played yet"') == mock_tasks
    assert len(_sections(page)) == len(read_run(folder).results)
    (folder / "episodes.jsonl").write_text("")
    page = write_report(folder).read_text()
    assert "No episode has ended yet" in page and not _sections(page)
    with pytest.raises(FileNotFoundError, match="no evaluation run"):
        write_report(tmp_path / "nothing")


class _References(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "action", "data", "poster", "srcset", "formaction"):
                self.urls.append(value or "")


def test_the_page_fetches_nothing_and_runs_no_script(mixed, tmp_path):
    _copy(mixed, tmp_path / "run")

    def inject(lines):
        lines[0]["trajectory"]["entries"][0]["message"]["content"] += " " + SCRIPT + ' <img src="http://x.test/a.png">'
        return lines

    _rewrite(tmp_path / "run", inject)
    page = write_report(tmp_path / "run").read_text()
    parser = _References()
    parser.feed(page)
    assert parser.urls and all(u.startswith("#") for u in parser.urls), sorted(set(parser.urls))[:5]
    assert not {"script", "link", "img", "iframe", "object", "embed"} & set(parser.tags)
    assert "svg" in parser.tags and parser.tags.count("svg") == 3  # the plots, inline
    assert "@import" not in page and not re.search(r"url\(\s*['\"]?(?!#)", page)
    assert "&lt;script&gt;window.mua_pwned=1&lt;/script&gt; &lt;img src=&quot;http://x.test/a.png&quot;&gt;" in page


def test_the_same_folder_gives_the_same_bytes(mixed, tmp_path):
    """In fresh interpreters with other hash seeds (set order) and the episodes in another order on disk."""
    _copy(mixed, tmp_path / "run")
    _rewrite(tmp_path / "run", lambda lines: lines[::-1])
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"report{seed}.html"
        code = f"from mua_gym.eval.report import write_report; write_report({str(tmp_path / 'run')!r}, {str(out)!r})"
        subprocess.run([sys.executable, "-c", code], check=True, timeout=120,
                       env={**os.environ, "PYTHONHASHSEED": seed})
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] == write_report(mixed, tmp_path / "same.html").read_bytes()


def test_without_matplotlib_the_report_says_which_extra_in_one_line(mixed, monkeypatch):
    from mua_gym.extras import MissingExtraError

    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtraError) as error:
        write_report(mixed)
    assert str(error.value).startswith("mua-gym report needs matplotlib")
    assert 'pip install "mua_gym[report]"' in str(error.value) and "\n" not in str(error.value)


def test_no_credential_the_run_was_given_shows(mixed, tmp_path):
    folder = _copy(mixed, tmp_path / "run")
    key, password = "sk-test-abcdefghijkl0123", "hunter22pw"
    run = json.loads((folder / "run.json").read_text())
    run["config"]["agent_kwargs"] = {"api_key": key, "api_base": f"http://bob:{password}@127.0.0.1:9/v1",
                                     "extra_headers": {"Authorization": "hv42"}}
    (folder / "run.json").write_text(json.dumps(run))

    def fail(lines):
        lines[0].update(error_kind="agent", error=f"AuthenticationError: bad key {key} for bob:{password}@127.0.0.1")
        return lines

    _rewrite(folder, fail)
    page = write_report(folder).read_text()
    assert "AuthenticationError: bad key" in page and "127.0.0.1:9/v1" in page
    assert key not in page and password not in page and "hv42" not in page


def test_the_badge_is_the_task_reward_and_a_shaped_reward_is_shown_beside_it():
    shaped_success = Trajectory(task_id="t", domain="mock", reward=0.9, terminated=True,
                                reward_info={"reward": 1.0, "task_reward": 1.0, "components": {"DB": 1.0}})
    shaped_failure = Trajectory(task_id="t", domain="mock", reward=0.4, terminated=True,
                                reward_info={"reward": 0.0, "task_reward": 0.0, "components": {"DB": 0.0}})
    head = trajectory_html(shaped_success, style=False).split('<div class="mua-box">')[0]
    assert "mua-pass" in head and "0.9 (shaped; task reward 1)" in head
    head = trajectory_html(shaped_failure, style=False).split('<div class="mua-box">')[0]
    assert "mua-fail" in head and "mua-warn" not in head and "0.4 (shaped; task reward 0)" in head


def _plot(page: str, label: str) -> str:
    return re.search(rf'<svg class="mua-plot" role="img" aria-label="{re.escape(label)}".*?</svg>', page, re.S).group()


def test_equal_pass_lines_share_one_labelled_line_and_counts_print_whole(tmp_path):
    """Two envs that both pass everything draw one line labelled with all three series (not three lines, each
    hiding the others); token totals print as whole numbers; each episode's time says what it is."""
    folder = tmp_path / "run"
    evaluate(EvalConfig(env_ids=[RETAIL, MOCK], agent="oracle", trials=2, num_tasks=2), out=folder)
    _rewrite(folder, lambda lines: [{**x, "usage": {"agent_prompt_tokens": 1234, "agent_cost": 0.5}} for x in lines])
    page = write_report(folder).read_text()
    plot = _plot(page, "pass^k against k")
    labels = re.findall(r"<text[^>]*>([^<]*)</text>", plot)
    assert "all tasks = Mock-v0 = Retail-v0" in labels and "Mock-v0" not in labels and "all tasks" not in labels
    usage = page[page.index('id="usage"'):]
    assert "<td class='mua-num'>9,872</td><td class='mua-num'>1,234</td>" in usage and "1,234.0" not in usage
    assert re.search(r"played in \d+\.\d\d s &middot;", page)


def test_an_all_zero_histogram_has_whole_ticks_and_episodes_with_no_verdict_are_counted(tmp_path):
    folder = tmp_path / "run"
    evaluate(EvalConfig(env_ids=[MOCK], agent="oracle", num_tasks=3), out=folder)
    # every episode made no tool call; the first was cut with no verdict (no component judged it)
    _rewrite(folder, lambda lines: [{**x, "tool_calls": 0, **({"components": {}} if i == 0 else {})}
                                    for i, x in enumerate(lines)])
    page = write_report(folder).read_text()
    plot = _plot(page, "turns and tool calls")
    ticks = re.findall(r"<text[^>]*>([^<]*)</text>", plot)
    numbers = [t for t in ticks if re.fullmatch(r"[\u2212-]?\d+(\.\d+)?", t.strip())]
    assert numbers and all("." not in t for t in numbers), numbers  # no -0.4 .. 0.4 axis
    rewards = page[page.index('id="rewards"'):page.index('id="rewards"') + 4000]
    assert "1 of them ended with no verdict at all" in rewards
    db = re.search(r"<tr><td>DB</td><td class='mua-num'>[^<]*</td><td class='mua-num'>(\d+)</td>"
                   r"<td class='mua-num'>(\d+)</td>", rewards)
    assert db and (int(db.group(1)), int(db.group(2))) == (2, 1)


def test_the_noise_floor_user_faults_void_episodes_and_the_ledger_per_role_are_shown(tmp_path):
    folder = tmp_path / "run"
    evaluate(EvalConfig(env_ids=[MOCK], agent="oracle", trials=2, num_tasks=2), out=folder)
    leak = {"kind": "goal_leak", "turn": 1, "evidence": "said the order id <b>W1</b>"}

    def edit(lines):
        lines[0].update(void="user_fault: goal_leak", user_faults=[leak], reward=0.0, success=False)
        for x in lines:
            x["usage"] = {"agent_total_tokens": 60, "agent_cost": 0.3, "judge_total_tokens": 40, "judge_cost": 0.1}
        return lines

    _rewrite(folder, edit)
    summary = read_run(folder).summary()
    page = write_report(folder).read_text()
    assert f"<b>±{summary.noise_floor:.3f}</b><span>noise floor (pass^1)</span>" in page
    assert "<b>50%</b><span>tasks that flip</span>" in page and "<b>1</b><span>void episodes</span>" in page
    assert "smaller differences are within noise" in page
    assert _row(page, "void-excluded") == {1: "1.000", 2: "1.000"}  # the void trial left out: each task 1.0
    assert _row(page, "void-failed") == {1: "0.750", 2: "0.500"}
    faults = page[page.index('id="faults"'):page.index('id="usage"')]
    assert "1 void episodes (user_fault 1)" in faults
    assert "<tr><td>goal_leak</td><td class='mua-num'>1</td><td class='mua-num'>0.250</td>" in faults
    assert escape("said the order id <b>W1</b>") in faults and '<a href="#ep-0">' in faults
    usage = page[page.index('id="usage"'):]
    assert "The judge took 40.0% of the tokens and 25.0% of the cost." in usage
    assert ('<tr data-role="judge"><td>judge</td><td class="mua-num">160</td><td class="mua-num">$0.4000</td>'
            '<td class="mua-num">40.0%</td><td class="mua-num">25.0%</td></tr>') in usage
    quiet = write_report(_copy(folder, tmp_path / "quiet"), tmp_path / "quiet.html")
    _rewrite(tmp_path / "quiet", lambda lines: [{**x, "user_faults": [], "void": None} for x in lines])
    page = write_report(tmp_path / "quiet", quiet).read_text()
    assert "None: no user fault was recorded and no episode is void." in page and "void-excluded" not in page
