"""mua-gym compare: pass^1 of two runs on their common tasks, B - A, and a paired bootstrap interval on it."""

from __future__ import annotations

import random

import numpy as np
import pytest

from mua_gym.eval.compare import RunComparison, bootstrap_means, compare_results, compare_runs, format_comparison
from mua_gym.eval.evaluate import Z95, EpisodeResult, EvalConfig, evaluate, pass1_variance

RETAIL, MOCK = "mua/Retail-v0", "mua/Mock-v0"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Oracle, random and fair runs of the same tasks (the fair agent fails some retail tasks)."""
    folders = {}
    for agent in ("oracle", "random", "fair"):
        folders[agent] = tmp_path_factory.mktemp(agent)
        evaluate(EvalConfig(env_ids=[RETAIL, MOCK], agent=agent, user="scripted", trials=2, num_tasks=10),
                 out=folders[agent])  # the scripted user: the fair agent fails some tasks
    return folders


def result(task: str, trial: int, success: bool, env: str = RETAIL, **fields) -> EpisodeResult:
    return EpisodeResult(env_id=env, task_id=task, trial=trial, seed=0, reward=float(success), success=success,
                         terminated=True, truncated=False, termination_reason="user_stop", turns=fields.pop("turns", 2),
                         tool_calls=1, tool_errors=0, **fields)


def test_a_run_against_itself_differs_by_exactly_zero(runs):
    c = compare_runs(runs["fair"], runs["fair"])
    assert c.overall.tasks == 14 and set(c.by_env) == {RETAIL, MOCK}  # the mock domain has 4 test tasks
    assert 0 < c.overall.a.pass_1 < 1  # the fair agent fails some: the rates are not all equal
    for g in (c.overall, *c.by_env.values()):
        assert g.diff == 0 and (g.low, g.high) == (0.0, 0.0) and not g.significant
        assert g.a == g.b
    assert c.only_a == c.only_b == [] and all(t.diff == 0 for t in c.tasks)
    assert c.a_agent == c.b_agent == "fair" and c.settings == {}


def test_oracle_against_random_is_clearly_worse_and_the_other_way_round_better(runs):
    worse = compare_runs(runs["oracle"], runs["random"])
    assert worse.overall.a.pass_1 == 1.0 and worse.overall.b.pass_1 == 0.0
    assert worse.overall.diff == -1.0 and worse.overall.high < 0 and worse.overall.significant
    better = compare_runs(runs["random"], runs["oracle"])
    assert better.overall.diff == 1.0 and better.overall.low > 0 and better.by_env[MOCK].low > 0
    assert better.overall.a.mean_reward == 0.0 and better.overall.b.mean_reward == 1.0
    assert better.overall.a.tool_errors > 0 == better.overall.b.tool_errors  # random calls go wrong
    assert [t.diff for t in better.tasks] == [1.0] * 14
    # fair against oracle: better on a few retail tasks only; the interval is wide but its figures are right
    fair = compare_runs(runs["fair"], runs["oracle"])
    rates = {(t.env_id, t.task_id): t.a_rate for t in fair.tasks}
    assert fair.overall.diff == pytest.approx(1 - sum(rates.values()) / 14)
    assert fair.overall.low <= fair.overall.diff <= fair.overall.high
    assert [abs(t.diff) for t in fair.tasks] == sorted((abs(t.diff) for t in fair.tasks), reverse=True)
    assert fair.tasks[0].diff > 0 and fair.tasks[-1].diff == 0


def test_the_interval_matches_a_plain_loop_over_the_same_draws_and_scipys_bootstrap():
    rng = random.Random(1)
    results_a, results_b = [], []
    for task in range(40):
        p = rng.random()
        for trial in range(3):
            results_a.append(result(f"t{task}", trial, rng.random() < p))
            results_b.append(result(f"t{task}", trial, rng.random() < min(1.0, p + 0.15)))
    c = compare_results(results_a, results_b, resamples=4000, seed=7, confidence=0.9)

    rate = {}
    for side, results in (("a", results_a), ("b", results_b)):
        for r in results:
            rate.setdefault((side, r.task_id), []).append(r.success)
    tasks = sorted({r.task_id for r in results_a})  # the order compare sorts common tasks in
    diffs = [sum(rate["b", t]) / 3 - sum(rate["a", t]) / 3 for t in tasks]
    picks = np.random.default_rng(7).integers(0, 40, size=(4000, 40))
    means = sorted(sum(diffs[i] for i in row) / 40 for row in picks.tolist())

    def quantile(q: float) -> float:  # linear interpolation between the order statistics
        position = q * (len(means) - 1)
        below = int(position)
        return means[below] + (position - below) * (means[min(below + 1, len(means) - 1)] - means[below])

    assert c.overall.low == pytest.approx(quantile(0.05), abs=1e-12)
    assert c.overall.high == pytest.approx(quantile(0.95), abs=1e-12)
    assert c.overall.diff == pytest.approx(sum(diffs) / 40, abs=1e-12)

    stats = pytest.importorskip("scipy.stats")
    a_rates = np.array([sum(rate["a", t]) / 3 for t in tasks])
    b_rates = np.array([sum(rate["b", t]) / 3 for t in tasks])
    theirs = stats.bootstrap((a_rates, b_rates), lambda a, b, axis=-1: np.mean(b - a, axis=axis), paired=True,
                             n_resamples=20_000, confidence_level=0.9, method="percentile", rng=0)
    # two Monte Carlo estimates of the same interval: the standard error of each end is ~0.005 here
    assert c.overall.low == pytest.approx(theirs.confidence_interval.low, abs=0.02)
    assert c.overall.high == pytest.approx(theirs.confidence_interval.high, abs=0.02)
    assert c.overall.low > 0  # B's edge of 0.15 a task shows at 40 tasks


def test_the_same_seed_gives_the_same_interval():
    rng = random.Random(3)
    results_a = [result(f"t{t}", 0, rng.random() < 0.5) for t in range(30)]
    results_b = [result(f"t{t}", 0, rng.random() < 0.6) for t in range(30)]
    first = compare_results(results_a, results_b, seed=5)
    again = compare_results(results_a, results_b, seed=5)
    assert (first.overall.low, first.overall.high) == (again.overall.low, again.overall.high)
    assert first == again and RunComparison.model_validate_json(first.model_dump_json()) == first
    assert first.overall.low < first.overall.diff < first.overall.high


def test_partial_overlap_compares_the_common_tasks_and_lists_the_rest(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    evaluate(EvalConfig(env_ids=[RETAIL, MOCK], agent="oracle", trials=2, num_tasks=3), out=a)
    evaluate(EvalConfig(env_ids=[RETAIL], agent="random", trials=3, num_tasks=5), out=b)
    c = compare_runs(a, b)
    retail = [f"retail-test-0-0000{i}" for i in range(5)]
    assert c.overall.tasks == 3 and list(c.by_env) == [RETAIL]
    assert sorted(t.task_id for t in c.tasks) == retail[:3]
    assert c.only_b == [(RETAIL, retail[3]), (RETAIL, retail[4])]
    assert len(c.only_a) == 3 and {env for env, _ in c.only_a} == {MOCK}
    assert all(t.a_trials == 2 and t.b_trials == 3 for t in c.tasks)
    assert c.overall.a.episodes == 6 and c.overall.b.episodes == 9  # the other figures: common tasks only
    assert c.settings == {"env_ids": [[RETAIL, MOCK], [RETAIL]], "agent": ["oracle", "random"], "trials": [2, 3],
                          "num_tasks": [3, 5]}
    text = format_comparison(c)
    assert "3 tasks in common; only A played 3, only B played 2" in text
    assert "Settings that differ: env_ids [" in text and "agent 'oracle' / 'random'; trials 2 / 3" in text
    assert f"Only B played 2 task(s): {RETAIL} {retail[3]}, {RETAIL} {retail[4]}" in text
    with pytest.raises(ValueError, match="no task in common"):
        compare_results([result("x", 0, True)], [result("y", 0, True)])


def test_the_terminal_table_lines_up_and_shows_every_figure():
    results_a = [result("t1", 0, True, usage={"agent_total_tokens": 100, "agent_cost": 0.5}),
                 result("t2", 0, False, error_kind="agent", error="boom"),
                 result("m1", 0, True, env=MOCK)]
    results_b = [result("t1", 0, False, turns=6, usage={"agent_total_tokens": 40, "user_total_tokens": 10,
                                                         "user_cost": 0.25}),
                 result("t2", 0, True), result("m1", 0, True, env=MOCK)]
    c = compare_results(results_a, results_b, a="runs/base", b="runs/new", resamples=200)
    assert c.overall.a.tokens == 100 and c.overall.b.tokens == 50 and c.overall.b.cost == 0.25
    assert c.overall.a.agent_errors == 1 and c.by_env[RETAIL].b.mean_turns == 4.0
    lines = format_comparison(c).splitlines()
    assert lines[:3] == ["A: runs/base", "B: runs/new", "3 tasks in common; only A played 0, only B played 0"]
    table = lines[4:8]
    assert table[0].split() == ["tasks", "pass^1", "A", "pass^1", "B", "B", "-", "A", "95%", "interval", "noise",
                                "floor"]
    assert table[1].split()[:5] == [MOCK, "1", "1.000", "1.000", "+0.000"]
    assert table[3].split()[:5] == ["overall", "3", "0.667", "0.667", "+0.000"]
    assert table[0].index("pass^1 A") + 8 == table[1].index("1.000") + 5  # a figure ends under its header
    figures = next(line for line in lines if line.startswith("overall A ")).split()
    assert figures[2:] == ["3", "0.667", "2.0", "1.0", "0", "1/0", "100", "0.5000", "0", "0", "0.667"]
    assert "Tokens and cost by role:" in lines
    ledger = next(line for line in lines if line.startswith("overall B ") and "cost" in line).split()
    assert ledger[2:10] == ["40", "0.0000", "10", "0.2500", "0", "0.0000", "0%", "tokens,"]
    assert "Tasks that differ most (2 of 3 differ; passed/trials):" in lines
    assert any(line.split() == [RETAIL, "t1", "1/1", "0/1", "-1.000"] for line in lines)


def test_bootstrap_means_are_vectorised_resample_means():
    values = np.array([0.0, 1.0, 0.5])
    means = bootstrap_means(values, 1000, np.random.default_rng(0))
    assert means.shape == (1000,) and means.min() >= 0 and means.max() <= 1
    picks = np.random.default_rng(0).integers(0, 3, size=(1000, 3))
    assert np.array_equal(means, values[picks].mean(axis=1))
    assert not np.array_equal(means, bootstrap_means(values, 1000, np.random.default_rng(1)))  # the seed counts
    with pytest.raises(ValueError, match="confidence"):
        compare_results([result("t", 0, True)], [result("t", 0, True)], confidence=1.0)


def test_a_difference_under_the_noise_floor_is_within_noise_and_one_well_above_is_not():
    # 20 tasks x 4 trials: each task 2 of 4 on A (flips as much as a task can); B one success more on 2 tasks
    results_a = [result(f"t{t}", k, k < 2) for t in range(20) for k in range(4)]
    close = [result(f"t{t}", k, k < (3 if t < 2 else 2)) for t in range(20) for k in range(4)]
    c = compare_results(results_a, close, resamples=500)
    per_task = 2 * 2 / (4 * 4 * 3)  # s (n - s) / (n^2 (n - 1)): the variance of one task's rate
    b_var = (2 * 3 * 1 / (4 * 4 * 3) + 18 * per_task) / 20 ** 2
    assert pass1_variance([[k < 2 for k in range(4)]] * 20) == pytest.approx(20 * per_task / 20 ** 2)
    assert c.overall.noise_floor == pytest.approx(Z95 * (20 * per_task / 20 ** 2 + b_var) ** 0.5)
    assert c.overall.diff == pytest.approx(0.025) and c.overall.within_noise  # 0.025 < ~0.22
    assert "within noise" in next(line for line in format_comparison(c).splitlines() if line.startswith("overall"))
    # B passes every trial of every task: +0.5, far above the floor (B's own trials agree: only A's spread counts)
    far = compare_results(results_a, [result(f"t{t}", k, True) for t in range(20) for k in range(4)], resamples=500)
    assert far.overall.diff == 0.5 and far.overall.noise_floor < 0.2 and not far.overall.within_noise
    row = next(line for line in format_comparison(far).splitlines() if line.startswith("overall"))
    assert "within noise" not in row and row.endswith("*")
    # runs whose every task's trials agree show no noise: any difference counts, none is within it
    steady = compare_results([result("t", k, False) for k in range(3)], [result("t", k, True) for k in range(3)])
    assert steady.overall.noise_floor == 0.0 and not steady.overall.within_noise


def test_compare_counts_faults_void_episodes_and_the_judges_share():
    base = [result("t1", 0, True, usage={"agent_total_tokens": 90, "judge_total_tokens": 10, "judge_cost": 0.1,
                                         "agent_cost": 0.3}),
            result("t1", 1, False, error_kind="user", error="down"),  # an old line: no void field
            result("t2", 0, False, void="user_fault: leaked the goal",
                   user_faults=[{"kind": "goal_leak", "turn": 1, "evidence": "..."}]),
            result("t2", 1, False, user_faults=[{"kind": "off_script", "turn": 2, "evidence": "..."}] * 2)]
    c = compare_results(base, base, resamples=100)
    a = c.overall.a
    assert (a.user_faults, a.void, a.pass_1) == (3, 2, 0.25)
    assert a.pass_1_void_excluded == 0.5  # t1: 1/1 once its user error is left out; t2: 0/1
    assert a.ledger["judge"].tokens == 10 and a.ledger["judge"].token_share == 0.1
    assert a.ledger["judge"].cost_share == pytest.approx(0.25) and "user" not in a.ledger
    text = format_comparison(c)
    assert "10% tokens, 25% cost" in text
    assert next(line for line in text.splitlines() if line.startswith("overall A ")).split()[-3:] == ["3", "2", "0.500"]
