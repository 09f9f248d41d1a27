"""One episode as HTML: what Jupyter shows for a Trajectory, and each transcript of ``mua-gym report``.

:func:`trajectory_html` returns a self-contained fragment: one small ``<style>`` block (omitted on request,
so a page of many episodes carries it once) and markup whose classes all start with ``mua-``. Nothing is
fetched: no scripts, fonts or images. Every piece of text the episode holds (messages, tool arguments and
results, row values) is HTML-escaped, so a model that writes ``<script>`` shows it as text.

The fragment has four parts: a header (domain, task, seed, user, reward, how it ended, counts), the reward
breakdown with its evidence, the diff of the final world against the gold one, and the transcript, in which
the system policy is collapsed and a dual-control user's own tool traffic is marked "hidden from agent".
"""

from __future__ import annotations

import json
from html import escape
from typing import Any, Protocol, Sequence

from mua_gym.jsonsafe import JSONError, loads
from mua_gym.messages import AssistantMessage, SystemMessage, ToolMessage, UserMessage

__all__ = ["STYLE", "escape_html", "trajectory_html"]


# What the view reads of a mua_gym.env.trajectory.Trajectory, stated here: trajectory.py imports this module.
class TrajectoryEntry(Protocol):
    @property
    def message(self) -> Any: ...
    @property
    def visible_to_agent(self) -> bool: ...


class Trajectory(Protocol):
    task_id: str
    domain: str
    seed: int | None
    user: str
    reward: float | None
    reward_info: dict[str, Any] | None
    terminated: bool
    truncated: bool
    termination_reason: str | None
    turns: int
    tool_calls: int
    tool_errors: int
    user_tool_calls: int

    @property
    def entries(self) -> Sequence[TrajectoryEntry]: ...
    @property
    def task_reward(self) -> float | None: ...


STYLE = """<style>
.mua-traj{font:13px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;max-width:1000px}
.mua-traj h3{font-size:15px;margin:2px 0}.mua-traj h4{font-size:13px;margin:8px 0 2px}
.mua-meta{color:#57606a}.mua-meta b{color:#1f2328;font-weight:600}
.mua-badge{display:inline-block;padding:0 7px;border-radius:10px;font-size:12px;font-weight:600;white-space:nowrap}
.mua-pass{background:#dafbe1;color:#116329}.mua-fail{background:#ffebe9;color:#a40e26}
.mua-none{background:#eaeef2;color:#57606a}.mua-warn{background:#fff1c2;color:#7d4e00}
.mua-box{border:1px solid #d0d7de;border-radius:6px;padding:6px 10px;margin:8px 0;background:#fff}
.mua-msg{border-left:4px solid #d0d7de;border-radius:4px;padding:3px 8px;margin:5px 0}
.mua-user{border-color:#0969da;background:#f0f6ff}.mua-assistant{border-color:#1a7f37;background:#f0faf2}
.mua-tool{border-color:#bf8700;background:#fff8e6}.mua-system{border-color:#8c959f;background:#f6f8fa}
.mua-toolerr{border-color:#cf222e;background:#fff0ef}
.mua-hidden{border-left-style:dashed;background:repeating-linear-gradient(135deg,#f6f0ff 0 8px,#efe6fd 8px 16px)}
.mua-role{font-size:11px;font-weight:700;letter-spacing:.04em;text-transform:uppercase;color:#57606a}
.mua-hid{background:#8250df;color:#fff}
.mua-traj pre{white-space:pre-wrap;word-break:break-word;margin:2px 0;max-height:28em;overflow:auto;
font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.mua-call{border:1px solid #d0d7de;border-radius:4px;background:#fff;padding:2px 6px;margin:3px 0}
.mua-fn{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-weight:600}
table.mua-t{border-collapse:collapse;margin:3px 0}
.mua-t td,.mua-t th{border:1px solid #d0d7de;padding:2px 6px;text-align:left;vertical-align:top}
.mua-t th{background:#f6f8fa;font-weight:600}
.mua-t code,.mua-traj code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;word-break:break-word}
.mua-was{background:#ffebe9}.mua-gold{background:#dafbe1}
.mua-traj summary{cursor:pointer}.mua-tool pre{max-height:16em}
</style>"""

_COMPONENT_NAMES = {
    "DB": "database equals gold", "COMMUNICATE": "told the user what was required",
    "ACTION": "made the expected calls", "ENV_ASSERTION": "environment assertions hold",
    "NL_ASSERTION": "judge's natural-language assertions",
}


def trajectory_html(trajectory: Trajectory, *, style: bool = True, policy_href: str | None = None) -> str:
    """The episode as an HTML fragment (header, reward breakdown, diff against gold, transcript).

    ``style=False`` leaves out the ``<style>`` block (a page that holds :data:`STYLE` once); ``policy_href``
    replaces the system policy with a link to where the page shows it (a report shows each env's once)."""
    parts = [STYLE if style else "", '<div class="mua-traj">', _header(trajectory)]
    info = trajectory.reward_info
    if info is None:
        parts.append('<div class="mua-box"><span class="mua-badge mua-none">not scored</span> '
                     "the episode was not scored (it did not end, or ended unpaid)</div>")
    else:
        parts += [_reward(info), _diff(info)]
    if trajectory.user_faults or trajectory.void:
        faults = [f"{f.get('kind')} at turn {f.get('turn')} ({f.get('handled', 'flagged')}): {f.get('evidence')}"
                  for f in trajectory.user_faults]
        void = f'<div class="mua-meta">void: <b>{_e(trajectory.void)}</b></div>' if trajectory.void else ""
        parts.append(f'<div class="mua-box">{_items("User faults", faults)}{void}</div>')
    parts.append(_transcript(trajectory, policy_href))
    parts.append("</div>")
    return "".join(parts)


def escape_html(value: Any) -> str:
    """``str(value)`` safe inside an element or a quoted attribute."""
    return escape(str(value), quote=True)


_e = escape_html


def _verdict(value: Any) -> str:
    if value is None:
        return '<span class="mua-badge mua-none">not judged</span>'
    if value == 1:
        return '<span class="mua-badge mua-pass">pass</span>'
    if value == 0:
        return '<span class="mua-badge mua-fail">fail</span>'
    return f'<span class="mua-badge mua-warn">{_e(value)}</span>'


def _header(t: Trajectory) -> str:
    task_reward = t.task_reward  # pass/fail is the binary task reward; a reward mode's shaping is shown beside it
    reward = "not scored" if t.reward is None else f"{t.reward:g}"
    if task_reward is not None and t.reward != task_reward:
        reward += f" (shaped; task reward {task_reward:g})"
    badge = _verdict(None if task_reward is None else 1 if task_reward == 1 else 0)
    ended = t.termination_reason or ("still running" if not (t.terminated or t.truncated) else "")
    how = "truncated" if t.truncated else "terminated" if t.terminated else "not ended"
    user_calls = f" &middot; <b>{t.user_tool_calls}</b> user tool calls (hidden)" if t.user_tool_calls else ""
    return (f'<h3>{_e(t.domain)} &middot; <code>{_e(t.task_id)}</code></h3>'
            f'<div class="mua-meta">reward <b>{_e(reward)}</b> {badge} &middot; ended <b>{_e(ended)}</b> ({how})'
            f' &middot; seed <b>{_e(t.seed)}</b> &middot; user <b>{_e(t.user or "?")}</b></div>'
            f'<div class="mua-meta"><b>{t.turns}</b> turns &middot; <b>{t.tool_calls}</b> tool calls, '
            f'<b>{t.tool_errors}</b> errors{user_calls}</div>')


def _items(title: str, values: list[Any]) -> str:
    if not values:
        return ""
    rows = "".join(f"<li><code>{_e(v)}</code></li>" for v in values)
    return f"<h4>{_e(title)}</h4><ul>{rows}</ul>"


def _reward(info: dict[str, Any]) -> str:
    components = info.get("components") or {}
    rows = "".join(f"<tr><td><b>{_e(name)}</b> <span class='mua-meta'>{_e(_COMPONENT_NAMES.get(name, ''))}</span>"
                   f"</td><td>{_verdict(value)}</td></tr>" for name, value in components.items())
    table = (f'<table class="mua-t"><tr><th>component</th><th>verdict</th></tr>{rows}</table>' if rows
             else '<div class="mua-meta">the task names no reward components</div>')
    partial = info.get("partial_credit")
    credit = ""
    if partial is not None:  # a results file is shared and may be edited: every figure goes out escaped
        credit = (f'<div class="mua-meta">partial credit <b>{_e(_figure(partial))}</b>: '
                  f'{_e(info.get("rows_reproduced", 0))} of {_e(info.get("gold_rows_changed", 0))} gold row changes '
                  f'reproduced, {_e(info.get("extra_rows_changed", 0))} rows changed that gold leaves alone</div>')
    verdicts = info.get("nl_assertions")
    nl = [f"assertion {i + 1}: {'pass' if v else 'fail'}" for i, v in enumerate(verdicts or [])]
    evidence = (_items("Information the agent never told the user", info.get("communicate_missing") or [])
                + _items("Expected actions never called", info.get("actions_missing") or [])
                + _items("Environment assertions that failed", info.get("env_assertions_failed") or [])
                + _items("Judge's verdicts", nl)
                + _items("Judge error", [info["judge_error"]] if info.get("judge_error") else []))
    return f'<div class="mua-box"><h4>Reward breakdown</h4>{table}{credit}{evidence}</div>'


def _figure(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else str(value)


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return f"<code>{_e(text)}</code>"


def _key(key: dict[str, Any]) -> str:
    return ", ".join(f"{_e(k)}={_value(v)}" for k, v in key.items())


def _row_values(row: dict[str, Any] | None, css: str) -> str:
    cells = "".join(f"<tr><td>{_e(c)}</td><td class='{css}'>{_value(v)}</td></tr>" for c, v in (row or {}).items())
    return f'<table class="mua-t">{cells}</table>'


def _rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def _diff(info: dict[str, Any]) -> str:
    tables = (info.get("db_diff") or {}).get("tables") or {}
    scored = "DB" in (info.get("components") or {})
    note = "" if scored else ' <span class="mua-meta">(the database is not part of this task\'s reward)</span>'
    if not tables:
        return (f'<div class="mua-box"><h4>Final world against gold{note}</h4>'
                '<span class="mua-badge mua-pass">matches gold</span></div>')
    out = [f'<div class="mua-box"><h4>Final world against gold{note}</h4>']
    for name, table in tables.items():
        inserted, deleted, updated = (table.get(k) or [] for k in ("inserted", "deleted", "updated"))
        out.append(f"<h4>table <code>{_e(name)}</code>: {_rows(len(updated))} with wrong values, "
                   f"{_rows(len(inserted))} missing, {_rows(len(deleted))} extra</h4>")
        if updated:
            rows = []
            for row in updated:
                before, after = row.get("before") or {}, row.get("after") or {}
                for column in row.get("changed") or sorted(set(before) | set(after)):
                    rows.append(f"<tr><td>{_key(row.get('key') or {})}</td><td>{_e(column)}</td>"
                                f"<td class='mua-was'>{_value(before.get(column))}</td>"
                                f"<td class='mua-gold'>{_value(after.get(column))}</td></tr>")
            out.append('<table class="mua-t"><tr><th>row</th><th>column</th><th>final world</th><th>gold</th></tr>'
                       + "".join(rows) + "</table>")
        for row in inserted:
            out.append(f"<div>missing from the final world (gold has it): {_key(row.get('key') or {})}</div>"
                       + _row_values(row.get("after"), "mua-gold"))
        for row in deleted:
            out.append(f"<div>extra in the final world (gold lacks it): {_key(row.get('key') or {})}</div>"
                       + _row_values(row.get("before"), "mua-was"))
    out.append("</div>")
    return "".join(out)


def _pretty(text: str) -> str:
    """JSON text indented for reading; anything else as written."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.dumps(loads(stripped), indent=1, ensure_ascii=False)
        except (JSONError, ValueError, TypeError):
            pass
    return text


def _calls(calls: list[Any] | None) -> str:
    out = []
    for call in calls or ():
        out.append(f'<div class="mua-call">&rarr; <span class="mua-fn">{_e(call.function.name)}</span>'
                   f"<pre>{_e(_pretty(call.function.arguments or '{}'))}</pre></div>")
    return "".join(out)


def _entry(entry: TrajectoryEntry, policy_href: str | None) -> str:
    m = entry.message
    hidden = "" if entry.visible_to_agent else " mua-hidden"
    mark = "" if entry.visible_to_agent else ' <span class="mua-badge mua-hid">hidden from agent</span>'
    if isinstance(m, SystemMessage):
        if policy_href is not None:
            return (f'<div class="mua-msg mua-system"><span class="mua-role">system</span> the env\'s policy '
                    f'({len(m.content)} characters): <a href="{_e(policy_href)}">shown once for the run</a></div>')
        return (f'<details class="mua-msg mua-system"><summary><span class="mua-role">system</span> policy '
                f"({len(m.content)} characters)</summary><pre>{_e(m.content)}</pre></details>")
    if isinstance(m, UserMessage):
        text = f"<pre>{_e(m.content)}</pre>" if m.content else ""
        return (f'<div class="mua-msg mua-user{hidden}"><span class="mua-role">user</span>{mark}{text}'
                f"{_calls(m.tool_calls)}</div>")
    if isinstance(m, AssistantMessage):
        thought = (f"<details><summary class='mua-meta'>reasoning</summary><pre>{_e(m.reasoning)}</pre></details>"
                   if m.reasoning else "")
        text = f"<pre>{_e(m.content)}</pre>" if m.content else ""
        return (f'<div class="mua-msg mua-assistant"><span class="mua-role">agent</span>{mark}{thought}{text}'
                f"{_calls(m.tool_calls)}</div>")
    if isinstance(m, ToolMessage):
        css = " mua-toolerr" if m.error else ""
        error = ' <span class="mua-badge mua-fail">error</span>' if m.error else ""
        by = " (the user's call)" if m.requestor == "user" else ""
        return (f'<div class="mua-msg mua-tool{css}{hidden}"><span class="mua-role">tool result</span> '
                f'<span class="mua-fn">{_e(m.name or "")}</span>{_e(by)}{error}{mark}'
                f"<pre>{_e(_pretty(m.content))}</pre></div>")
    return f'<div class="mua-msg"><pre>{_e(m)}</pre></div>'


def _transcript(t: Trajectory, policy_href: str | None) -> str:
    body = "".join(_entry(e, policy_href) for e in t.entries)
    return f'<div class="mua-box"><h4>Transcript ({len(t.entries)} messages)</h4>{body}</div>'
