"""``mua-gym report``: one self-contained HTML page for a run folder of ``mua-gym eval``.

:func:`write_report` reads the folder with :func:`~mua_gym.eval.evaluate.read_run` (a finished run, or one still
running or killed: what the folder holds so far) and writes a single file that needs nothing at view time: no
CDN, fonts, scripts or images from anywhere; the plots are inline SVG drawn by matplotlib (the ``report``
extra), the transcripts are :func:`~mua_gym.env.html_view.trajectory_html` fragments. The page shows the run's
config and versions, pass^k (overall, per env, per category) with a plot against k, per-category pass rates,
a task-by-trial pass matrix whose cells open their episode's transcript, histograms of turns and tool calls,
the reward components, the agent and user errors, the user's faults and the void episodes, tokens and cost per
role (agent, user, judge), the noise floor of pass^1, and each env's policy once. A page gets
shared: the config's credential-named values are masked and error texts redacted (:mod:`mua_gym.llm.redact`).

Transcripts are shown one at a time by the CSS ``:target`` rule (a link to ``#ep-N`` shows episode N): no
JavaScript. The same folder gives the same bytes: episodes are sorted by env, task and trial (not the order
they ended in), nothing time-dependent is written, and the SVGs carry fixed ids and no date.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mua_gym.eval.evaluate import (
    ROLES, EpisodeResult, EvalRun, EvalSummary, group_by_task, read_run, tokens_and_cost, write_atomic,
)
from mua_gym.env.html_view import STYLE, escape_html as _e, trajectory_html
from mua_gym.extras import require_extra
from mua_gym.llm.redact import masked

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["report_html", "write_report"]

REPORT = "report.html"
_PASS, _FAIL, _ERROR = "#2da44e", "#cf222e", "#bf8700"

_PAGE_STYLE = """<style>
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;background:#f6f8fa}
header{background:#24292f;color:#fff;padding:12px 24px}header h1{font-size:20px;margin:0 0 4px}
header a{color:#c9d1d9;margin-right:14px;text-decoration:none}header a:hover{color:#fff}
main{padding:4px 24px 40px;max-width:1240px}
.mua-sec{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:8px 16px 12px;margin:14px 0}
.mua-sec h2{font-size:16px;margin:4px 0 8px}
.mua-cards{display:flex;flex-wrap:wrap;gap:10px}
.mua-card{border:1px solid #d0d7de;border-radius:8px;padding:6px 14px;min-width:100px}
.mua-card b{display:block;font-size:22px;font-weight:600}.mua-card span{color:#57606a;font-size:12px}
.mua-grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:12px;align-items:start}
.mua-plot{max-width:100%;height:auto}
.mua-scroll{max-height:36em;overflow:auto}
.mua-cell{display:inline-block;width:24px;line-height:18px;text-align:center;color:#fff;text-decoration:none;
border-radius:3px;font-size:12px;font-weight:700}
.mua-c-p{background:#2da44e}.mua-c-f{background:#cf222e}.mua-c-e{background:#bf8700}.mua-c-m{background:#d0d7de}
.mua-ep{display:none}.mua-ep:target{display:block}
.mua-epnav a{margin-right:14px}.mua-num{text-align:right;font-variant-numeric:tabular-nums}
.mua-partial{background:#fff1c2;border:1px solid #d4a72c;border-radius:6px;padding:4px 10px}
</style>"""


def write_report(folder: str | os.PathLike[str], out: str | os.PathLike[str] | None = None) -> Path:
    """Writes the report of the run in ``folder`` to ``out`` (default ``<folder>/report.html``; a folder given as
    ``out`` gets a ``report.html``); returns its path. Raises FileNotFoundError where the folder holds no run,
    ValueError where its files are not a run's, MissingExtraError without matplotlib."""
    target = Path(out) if out is not None else Path(folder) / REPORT
    if target.is_dir():
        target = target / REPORT
    page = report_html(read_run(folder))
    write_atomic(target, page)  # a browser refreshing never sees half a page
    return target


def report_html(run: EvalRun) -> str:
    """The report page of a run read back, as one HTML document."""
    _matplotlib()  # fail before any work, in one line
    results = run.results
    summary = run.summary()
    anchors = {r.key: f"ep-{i}" for i, r in enumerate(results)}
    envs = ", ".join(run.config.env_ids)
    title = f"mua-gym eval: {run.config.agent} on {envs}"
    sections = [
        _overview(run, results, summary), _pass_table(summary), _categories(summary),
        _matrix(run, results, anchors), _episodes(run, results, anchors), _distributions(results),
        _rewards(results, summary), _errors(run, results, anchors), _faults(run, results, summary, anchors),
        _usage(results, summary), _policies(run), _config(run),
    ]
    links = [("overview", "Overview"), ("passk", "pass^k"), ("categories", "Categories"), ("matrix", "Tasks x trials"),
             ("distributions", "Turns & tool calls"), ("rewards", "Rewards"), ("errors", "Errors"),
             ("faults", "User faults"), ("usage", "Tokens & cost"), ("policies", "Policies"), ("config", "Config")]
    nav = "".join(f'<a href="#{a}">{_e(t)}</a>' for a, t in links)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>{_e(title)}</title>{_PAGE_STYLE}{STYLE}</head><body>"
            f"<header><h1>{_e(title)}</h1><nav>{nav}</nav></header><main>{''.join(sections)}</main></body></html>\n")


def _section(anchor: str, title: str, body: str) -> str:
    return f'<section class="mua-sec" id="{anchor}"><h2>{_e(title)}</h2>{body}</section>'


def _short(env_id: str) -> str:
    return env_id.split("/", 1)[-1]


def _overview(run: EvalRun, results: list[EpisodeResult], summary: EvalSummary) -> str:
    tasks = group_by_task(results)
    short = sum(len(v) < run.config.trials for v in tasks.values())
    planned = ""
    if run.config.task_ids is not None:
        planned = f" of the {len(run.config.task_ids) * len(run.config.env_ids)} tasks planned"
    elif run.config.num_tasks is not None:
        planned = f" (planned: up to {run.config.num_tasks} per env)"
    status = ""
    if not results:
        status = '<p class="mua-partial">No episode has ended yet: the run has only just started.</p>'
    elif short:
        status = (f'<p class="mua-partial">Partial run: {short} of {len(tasks)} tasks have fewer than the '
                  f"{run.config.trials} trials configured; the figures cover the episodes written so far.</p>")
    # the user each episode recorded: the config's, or each domain's default where it names none
    users = run.config.user or ", ".join(sorted({str(r.trajectory.get("user") or "?") for r in results})) or "default"
    tokens, cost = tokens_and_cost(summary.usage)
    p1 = summary.pass_hat_k.get(1)
    cards = [("pass^1", "—" if p1 is None else f"{p1:.3f}"),
             (f"pass^{summary.trials}", "—" if not summary.trials else f"{summary.pass_hat_k[summary.trials]:.3f}"),
             ("mean reward", f"{summary.mean_reward:.3f}"), ("episodes", str(summary.episodes)),
             ("tasks", f"{summary.tasks}"), ("trials", str(run.config.trials)),
             ("agent / user errors", f"{summary.agent_errors} / {summary.user_errors}"),
             ("noise floor (pass^1)", "—" if summary.noise_floor is None else f"±{summary.noise_floor:.3f}"),
             ("tasks that flip", "—" if summary.flip_tasks is None else f"{summary.flip_tasks:.0%}"),
             ("void episodes", str(summary.void_episodes)),
             ("tokens", f"{tokens:,.0f}"), ("cost (USD)", f"{cost:.4f}"),
             ("episode time (s)", f"{summary.episode_s:.1f}")]
    body = "".join(f'<div class="mua-card"><b>{_e(v)}</b><span>{_e(k)}</span></div>' for k, v in cards)
    text = (f"<p>{summary.episodes} episodes over {summary.tasks} tasks{_e(planned)} &times; "
            f"{run.config.trials} trials; agent <code>{_e(run.config.agent)}</code>, user "
            f"<code>{_e(users)}</code>, split <code>{_e(run.config.split)}</code>. "
            f"Success is a reward of 1; pass^k is the chance that "
            f"k trials of a task drawn at random all succeed, averaged over tasks.{_noise_text(summary)}</p>")
    return _section("overview", "Overview", status + text + f'<div class="mua-cards">{body}</div>')


def _noise_text(summary: EvalSummary) -> str:
    """The overview's sentence on the noise floor (empty before any episode)."""
    if summary.noise_floor is None:
        return ""
    seen = ("With one trial a task no flip can be seen: the floor is an upper bound from the overall pass rate."
            if summary.flip_rate is None else
            f"{summary.flip_tasks:.0%} of tasks flip (their trials disagree); the mean flip rate (the chance two "
            f"trials of a task differ) is {summary.flip_rate:.3f}.")
    return (f" The noise floor: a rerun of this run could differ in pass^1 by up to <b>{summary.noise_floor:.3f}</b> "
            f"from trial noise alone (95%); smaller differences are within noise. {_e(seen)}")


def _pass_table(summary: EvalSummary) -> str:
    if not summary.trials:
        return _section("passk", "pass^k", "<p>No episodes yet.</p>")
    ks = list(range(1, summary.trials + 1))
    head = "".join(f"<th>pass^{k}</th>" for k in ks)
    rows: list[tuple[str, str, dict[int, float]]] = [("overall", "all tasks", summary.pass_hat_k)]
    rows += [(f"env:{e}", e, v) for e, v in summary.by_env.items()]
    rows += [(f"category:{c}", c, v) for c, v in summary.by_category.items()]
    if summary.void_episodes:
        rows += [("void-excluded", "void episodes left out", summary.pass_hat_k_void_excluded),
                 ("void-failed", "void episodes as failures", summary.pass_hat_k_void_failed)]
    body = "".join(f'<tr data-row="{_e(key)}"><td>{_e(label)}</td>'
                   + "".join(f'<td class="mua-num" data-k="{k}">{values[k]:.3f}</td>' if k in values
                             else '<td class="mua-num">—</td>' for k in ks)
                   + "</tr>" for key, label, values in rows)
    table = f'<table class="mua-t"><tr><th>tasks</th>{head}</tr>{body}</table>'
    plot = _pass_plot(summary)
    return _section("passk", "pass^k", f'<div class="mua-grid"><div class="mua-scroll">{table}</div>'
                                       f"<div>{plot}</div></div>")


def _matplotlib() -> Any:
    require_extra("matplotlib.figure", "report", "mua-gym report")  # the figure class the plots are drawn on
    return require_extra("matplotlib", "report", "mua-gym report")


def _figure(width: float, height: float) -> "Figure":
    from matplotlib.figure import Figure  # no pyplot: no global backend or figure registry is touched

    return Figure(figsize=(width, height), layout="constrained")


def _svg(figure: "Figure", name: str) -> str:
    """The figure as inline SVG: text as text (the page's font), ids salted by ``name`` so two plots on one page
    never share an id, no date or creator, so the same figure gives the same bytes."""
    matplotlib = _matplotlib()
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"mua-{name}", "svg.fonttype": "none"}):
        figure.savefig(buffer, format="svg",
                       metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    prefix = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    # matplotlib numbers its ids per figure (figure_1, axes_1, ...): prefixed, two plots on one page never clash
    text = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}-{m.group(1)}"', text)
    text = re.sub(r'(href="#|url\(#)([^")]+)', lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", text)
    return text.replace("<svg ", f'<svg class="mua-plot" role="img" aria-label="{_e(name)}" ', 1)


def _style_axes(ax: Any) -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(True, color="#d0d7de", linewidth=0.6)
    ax.set_axisbelow(True)


def _pass_plot(summary: EvalSummary) -> str:
    figure = _figure(5.6, 3.4)
    ax = figure.subplots()
    ks = list(range(1, summary.trials + 1))
    # Lines with the same values would hide each other: each is drawn once, labelled with every series it is.
    series: dict[tuple[float, ...], list[str]] = {tuple(summary.pass_hat_k[k] for k in ks): ["all tasks"]}
    for env, values in summary.by_env.items():
        if len(summary.by_env) > 1:
            series.setdefault(tuple(values[k] for k in ks), []).append(_short(env))
    for i, (values, names) in enumerate(series.items()):
        ax.plot(ks, values, marker="o", linewidth=2.4 if i == 0 else 1.4, color="#24292f" if i == 0 else None,
                label=" = ".join(names))
    ax.set_xticks(ks)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("k (trials that must all succeed)")
    ax.set_ylabel("pass^k")
    ax.legend(frameon=False, fontsize=9)
    _style_axes(ax)
    return _svg(figure, "pass^k against k")


def _categories(summary: EvalSummary) -> str:
    if not summary.by_category:
        return _section("categories", "Per-category pass rates", "<p>No episodes yet.</p>")
    items = sorted(summary.by_category.items(), key=lambda kv: (kv[1][1], kv[0]))
    figure = _figure(6.4, 0.9 + 0.28 * len(items))
    ax = figure.subplots()
    labels = [c.split(" ", 1)[1] + f" ({_short(c.split(' ', 1)[0])})" for c, _ in items]
    rates = [v[1] for _, v in items]
    ax.barh(range(len(items)), rates, color=[_PASS if r >= 0.999 else _FAIL if r < 0.5 else _ERROR for r in rates])
    ax.set_yticks(range(len(items)), labels, fontsize=9)
    ax.set_xlim(0, 1)
    ax.set_xlabel("pass^1 (share of trials that succeed)")
    for i, rate in enumerate(rates):
        ax.text(min(rate, 0.9) + 0.01, i, f"{rate:.2f}", va="center", fontsize=8)
    _style_axes(ax)
    return _section("categories", "Per-category pass rates", _svg(figure, "pass rate per category"))


def _matrix(run: EvalRun, results: list[EpisodeResult], anchors: dict[tuple[str, str, int], str]) -> str:
    tasks = group_by_task(results)
    if not tasks:
        return _section("matrix", "Tasks x trials", "<p>No episodes yet.</p>")
    trials = max(run.config.trials, max(r.trial for r in results) + 1)
    head = "".join(f"<th>{t}</th>" for t in range(trials))
    rows = []
    for (env, task), episodes in tasks.items():
        by_trial = {r.trial: r for r in episodes}
        cells = []
        for t in range(trials):
            r = by_trial.get(t)
            if r is None:
                cells.append('<td><span class="mua-cell mua-c-m" title="not played yet">&middot;</span></td>')
                continue
            kind, mark = ("e", "!") if r.error else ("p", "&#10003;") if r.success else ("f", "&#10007;")
            tip = f"trial {t}: reward {r.reward:g}, {r.termination_reason or ''}" + (f", {r.error_kind} error"
                                                                                   if r.error else "")
            cells.append(f'<td><a class="mua-cell mua-c-{kind}" href="#{anchors[r.key]}" title="{_e(tip)}">'
                         f"{mark}</a></td>")
        passed = sum(r.success for r in episodes)
        first = anchors[episodes[0].key]
        rows.append(f'<tr><td>{_e(_short(env))}</td><td><a class="mua-task" href="#{first}">{_e(task)}</a></td>'
                    f"<td>{_e(episodes[0].category or '')}</td><td class='mua-num'>{passed}/{len(episodes)}</td>"
                    f"{''.join(cells)}</tr>")
    table = (f'<table class="mua-t"><tr><th>env</th><th>task</th><th>category</th><th>passed</th>{head}</tr>'
             f"{''.join(rows)}</table>")
    legend = ('<p class="mua-meta"><span class="mua-cell mua-c-p">&#10003;</span> success '
              '<span class="mua-cell mua-c-f">&#10007;</span> failure <span class="mua-cell mua-c-e">!</span> '
              'agent or user error <span class="mua-cell mua-c-m">&middot;</span> not played yet. '
              "Click a task or a cell to open its transcript below.</p>")
    return _section("matrix", "Tasks x trials", legend + f'<div class="mua-scroll">{table}</div>')


def _episodes(run: EvalRun, results: list[EpisodeResult], anchors: dict[tuple[str, str, int], str]) -> str:
    redact = _redactor(run)
    out = ['<div id="transcripts">']
    for i, r in enumerate(results):
        nav = ['<a href="#matrix">&uarr; tasks x trials</a>']
        if i:
            nav.append(f'<a href="#{anchors[results[i - 1].key]}">&larr; previous</a>')
        if i + 1 < len(results):
            nav.append(f'<a href="#{anchors[results[i + 1].key]}">next &rarr;</a>')
        tokens, cost = tokens_and_cost(r.usage)
        facts = (f"{_e(r.env_id)} &middot; trial {r.trial} &middot; category {_e(r.category or '-')} &middot; "
                 f"played in {r.wall_s:.2f} s &middot; {tokens:,.0f} tokens, ${cost:.4f}")
        error = (f'<p class="mua-partial">{_e(r.error_kind)} error: <code>{_e(redact(r.error))}</code></p>'
                 if r.error else "")
        transcript = trajectory_html(run.trajectory(r), style=False, policy_href=f"#{_policy_anchor(r.env_id)}")
        out.append(f'<section class="mua-sec mua-ep" id="{anchors[r.key]}"><div class="mua-epnav">{"".join(nav)}'
                   f'</div><div class="mua-meta">{facts}</div>{error}{transcript}</section>')
    out.append("</div>")
    return "".join(out)


def _distributions(results: list[EpisodeResult]) -> str:
    if not results:
        return _section("distributions", "Turns and tool calls", "<p>No episodes yet.</p>")
    from matplotlib.ticker import MaxNLocator

    figure = _figure(9.6, 3.0)
    axes = figure.subplots(1, 2)
    for ax, field, label in zip(axes, ("turns", "tool_calls"), ("turns per episode", "agent tool calls per episode")):
        values = [getattr(r, field) for r in results]
        low, high = min(values), max(values)
        bins = [b - 0.5 for b in range(low, high + 2)]
        ax.hist([[getattr(r, field) for r in results if r.success], [getattr(r, field) for r in results
                                                                        if not r.success]],
                bins=bins, stacked=True, color=[_PASS, _FAIL], label=["success", "failure"])
        ax.set_xlabel(label)
        ax.set_ylabel("episodes")
        # whole numbers on both axes, at least 0..1 wide, and headroom above the bars for the legend
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim(low - 0.5, max(high, low + 1) + 0.5)
        tallest = max(Counter(values).values())
        ax.set_ylim(0, tallest * 1.35 + 0.5)
        ax.legend(frameon=False, fontsize=9, loc="upper right", ncols=2)
        _style_axes(ax)
    n = len(results)
    means = (f"<p>mean {sum(r.turns for r in results) / n:.2f} turns, {sum(r.tool_calls for r in results) / n:.2f} "
             f"tool calls and {sum(r.tool_errors for r in results) / n:.2f} tool errors per episode.</p>")
    return _section("distributions", "Turns and tool calls", means + _svg(figure, "turns and tool calls"))


def _rewards(results: list[EpisodeResult], summary: EvalSummary) -> str:
    judged: dict[str, int] = defaultdict(int)
    for r in results:
        for name, value in r.components.items():
            judged[name] += value is not None
    names = sorted(judged)
    # an episode with no verdict at all (cut before its end was scored) is one that no component judged
    unscored = sum(not r.components for r in results)
    rows = "".join(f"<tr><td>{_e(n)}</td><td class='mua-num'>"
                   f"{'—' if n not in summary.components else f'{summary.components[n]:.3f}'}</td>"
                   f"<td class='mua-num'>{judged[n]}</td><td class='mua-num'>{len(results) - judged[n]}</td></tr>"
                   for n in names)
    reasons: dict[str, int] = defaultdict(int)
    for r in results:
        reasons[r.termination_reason or "not ended"] += 1
    ends = "".join(f"<tr><td>{_e(k)}</td><td class='mua-num'>{v}</td></tr>" for k, v in sorted(reasons.items()))
    no_verdict = (f" {unscored} of them ended with no verdict at all (truncated, or on an agent or user error, "
                  "before the world was scored): they count as not judged by every component." if unscored else "")
    body = (f"<p>mean reward <b>{summary.mean_reward:.3f}</b> over {summary.episodes} episodes.{no_verdict}</p>"
            '<div class="mua-grid"><table class="mua-t"><tr><th>component</th><th>mean (where judged)</th>'
            f"<th>judged</th><th>not judged</th></tr>{rows}</table>"
            f'<table class="mua-t"><tr><th>how episodes ended</th><th>episodes</th></tr>{ends}</table></div>')
    return _section("rewards", "Reward and its components", body)


def _redactor(run: EvalRun) -> Any:
    from mua_gym.llm.redact import Redactor

    return Redactor.of(run.config.agent_kwargs, run.config.user_kwargs, run.config.judge_kwargs)


def _errors(run: EvalRun, results: list[EpisodeResult], anchors: dict[tuple[str, str, int], str]) -> str:
    redact = _redactor(run)
    failed = [r for r in results if r.error]
    if not failed:
        return _section("errors", "Agent and user errors", "<p>None: no episode ended on an agent or user error.</p>")
    rows = "".join(f'<tr><td><a href="#{anchors[r.key]}">{_e(_short(r.env_id))} {_e(r.task_id)} trial {r.trial}</a>'
                   f"</td><td>{_e(r.error_kind)}</td><td><code>{_e(redact(r.error))}</code></td></tr>" for r in failed)
    agent = sum(r.error_kind == "agent" for r in failed)
    return _section("errors", "Agent and user errors",
                    f"<p>{agent} agent and {len(failed) - agent} user errors (each episode ended unpaid).</p>"
                    f'<div class="mua-scroll"><table class="mua-t"><tr><th>episode</th><th>side</th><th>error</th>'
                    f"</tr>{rows}</table></div>")


def _faults(run: EvalRun, results: list[EpisodeResult], summary: EvalSummary,
            anchors: dict[tuple[str, str, int], str]) -> str:
    """The user's faults per kind, the void episodes and pass^k with them left out, and each fault's evidence."""
    title = "User faults and void episodes"
    if not summary.user_faults and not summary.void_episodes:
        return _section("faults", title, "<p>None: no user fault was recorded and no episode is void.</p>")
    redact = _redactor(run)
    kinds = "".join(f"<tr><td>{_e(kind)}</td><td class='mua-num'>{rate.faults}</td>"
                    f"<td class='mua-num'>{rate.per_episode:.3f}</td><td class='mua-num'>{rate.episode_share:.1%}</td>"
                    "</tr>" for kind, rate in summary.user_faults.items())
    reasons = ", ".join(f"{_e(reason)} {count}" for reason, count in summary.void_reasons.items())
    void = (f"<p>{summary.void_episodes} void episodes ({reasons}): nothing to learn from (the user failed, or broke "
            "its scenario). pass^k counts them as failures; the pass^k table also gives it with them left out.</p>"
            if summary.void_episodes else "<p>No episode is void.</p>")
    rows = "".join(f'<tr><td><a href="#{anchors[r.key]}">{_e(_short(r.env_id))} {_e(r.task_id)} trial {r.trial}</a>'
                   f"</td><td>{_e(str(f.get('kind', '?')))}</td><td class='mua-num'>{_e(str(f.get('turn', '')))}</td>"
                   f"<td><code>{_e(redact(str(f.get('evidence', ''))))}</code></td></tr>"
                   for r in results for f in r.user_faults)
    table = ('<table class="mua-t"><tr><th>kind</th><th>faults</th><th>per episode</th><th>episodes with one</th>'
             f"</tr>{kinds}</table>" if kinds else "")
    listing = ('<div class="mua-scroll"><table class="mua-t"><tr><th>episode</th><th>kind</th><th>turn</th>'
               f"<th>evidence</th></tr>{rows}</table></div>" if rows else "")
    return _section("faults", title, void + table + listing)


def _usage(results: list[EpisodeResult], summary: EvalSummary) -> str:
    if not summary.usage:
        return _section("usage", "Tokens and cost",
                        "<p>No model usage recorded (a scripted agent and user call no model).</p>")
    tokens, cost = tokens_and_cost(summary.usage)
    n = len(results) or 1
    roles = "".join(f'<tr data-role="{role}"><td>{role}</td><td class="mua-num">{round(used.tokens):,d}</td>'
                    f'<td class="mua-num">${used.cost:.4f}</td><td class="mua-num">{used.token_share:.1%}</td>'
                    f'<td class="mua-num">{used.cost_share:.1%}</td></tr>'
                    for role in ROLES if (used := summary.ledger.get(role)) is not None)
    judge = summary.ledger.get("judge")
    share = (f" The judge took {judge.token_share:.1%} of the tokens and {judge.cost_share:.1%} of the cost."
             if judge else "")
    rows = "".join(f"<tr><td>{_e(k)}</td><td class='mua-num'>{_amount(k, v)}</td>"
                   f"<td class='mua-num'>{_amount(k, v / n)}</td></tr>" for k, v in sorted(summary.usage.items()))
    return _section("usage", "Tokens and cost",
                    f"<p><b>{tokens:,.0f}</b> tokens and <b>${cost:.4f}</b> in all (agent, user and judge "
                    f"together).{share}</p>"
                    '<div class="mua-grid"><table class="mua-t"><tr><th>role</th><th>tokens</th><th>cost</th>'
                    f"<th>share of tokens</th><th>share of cost</th></tr>{roles}</table>"
                    '<table class="mua-t"><tr><th>counter</th><th>run total</th><th>per episode</th></tr>'
                    f"{rows}</table></div>")


def _amount(key: str, value: float) -> str:
    return f"${value:.4f}" if key.endswith("cost") else f"{round(value):,d}"  # tokens are whole


def _policy_anchor(env_id: str) -> str:
    return "policy-" + re.sub(r"[^A-Za-z0-9_-]", "-", env_id)


def _policies(run: EvalRun) -> str:
    parts = []
    for env_id, record in run.envs.items():
        tools = ", ".join(sorted(str(t.get("function", t).get("name", "?")) for t in record.tools))
        parts.append(f'<details id="{_policy_anchor(env_id)}"><summary><b>{_e(env_id)}</b> ({_e(record.domain)}): '
                     f"policy of {len(record.policy)} characters, {len(record.tools)} agent tools</summary>"
                     f"<p class='mua-meta'>tools: {_e(tools)}</p><pre class='mua-box'>{_e(record.policy)}</pre>"
                     "</details>")
    return _section("policies", "Policies and tools (the system message of every episode)", "".join(parts))


def _config(run: EvalRun) -> str:
    redact = _redactor(run)  # a page gets shared: no key the run was given shows, nor a URL's credentials
    config = masked(run.config.model_dump(mode="json"))
    rows = "".join(f"<tr><td>{_e(k)}</td><td><code>{_e(redact(json.dumps(v, sort_keys=True)))}</code></td></tr>"
                   for k, v in config.items())
    versions = "".join(f"<tr><td>{_e(k)}</td><td><code>{_e(v)}</code></td></tr>"
                       for k, v in sorted(run.versions.items()))
    return _section("config", "Run configuration and versions",
                    f'<div class="mua-grid"><table class="mua-t"><tr><th>setting</th><th>value</th></tr>{rows}</table>'
                    f'<table class="mua-t"><tr><th>package</th><th>version</th></tr>{versions}</table></div>')
