"""The Overview page: quadrants per day, merges, ballots, breaker, incidents, audit, last tick."""

from __future__ import annotations

from datetime import datetime, timedelta

from capdaemon.config import Config
from capdaemon.dashboard.charts import quadrant_bars
from capdaemon.dashboard.html import esc, quadrant, table, when
from capdaemon.dashboard.links import story_href, web_url
from capdaemon.dashboard.readmodel import QUADRANTS, ReadModel
from capdaemon.filenames import METRICS_FILE, PRS_FILE
from capdaemon.timefmt import parse_utc


def parse_ts(ts: str) -> datetime | None:
    """An audit timestamp (`...Z`) → aware datetime, or None."""
    try:
        return parse_utc(ts, "ts")
    except ValueError:
        return None


def age(ts: str, now: datetime) -> str:
    """`3d 4h` / `5h 10m` / `12m` since `ts`, or `?`."""
    dt = parse_ts(ts)
    if dt is None:
        return "?"
    secs = max(0, int((now - dt).total_seconds()))
    d, h, m = secs // 86400, secs % 86400 // 3600, secs % 3600 // 60
    return f"{d}d {h}h" if d else f"{h}h {m}m" if h else f"{m}m"


def issue_link(config: Config, issue: str) -> str:
    """An issue (`owner/repo#N`, or a number in the decision repo) as a link when it has a web
    page, else as text."""
    repo = config.decision_repo or config.own_repo or ""
    ref = f"{repo}#{issue}" if issue.isdigit() and repo else issue
    url = web_url(config, ref, "issues")
    if not url:
        return f"<code>{esc(ref or '?')}</code>"
    return f'<a href="{esc(url)}" rel="noopener noreferrer">{esc(ref)}</a>'


def pr_link(model: ReadModel, ref: str, root: str = "") -> str:
    """A PR reference linking to its story page when the logs know it."""
    if ref in model.by_ref:
        return f'<a href="{esc(root + story_href(ref))}">{esc(ref)}</a>'
    return esc(ref)


def _cards(model: ReadModel) -> str:
    today = model.now.date().isoformat()
    merged_today = sum(1 for ts, _, _ in model.merges if ts.startswith(today))
    open_escalations = sum(1 for t in model.tasks for e in t.escalations if e.open)
    # without prs.json the PR states and open ballots are unknown: "?", never a 0 as a fact
    unknown = any(p.file.endswith(PRS_FILE) for p in model.problems)
    open_prs = "?" if unknown else str(sum(1 for r in model.prs if r.state == "open"))
    cards = [
        ("classified PRs", str(len(model.prs)), "prs"),
        ("open PRs", open_prs, "open"),
        ("classified heads (pushes)", str(model.heads), "heads"),
        ("merges today (UTC)", str(merged_today), "merges-today"),
        ("merges in all", str(len(model.merges)), "merges"),
        ("would merge, shadow mode (not merged)", str(len(model.would_merges)), "would-merge"),
        ("ballots pending", "?" if unknown else str(len(model.pending)), "pending"),
        ("ballots decided", str(len(model.decided)), "decided"),
        ("open escalations", str(open_escalations), "escalations"),
    ]
    cards += [(f"PRs now {q}", str(model.totals.get(q, 0)), f"total-{q}") for q in QUADRANTS]
    return (
        "<p class=muted>The quadrant cards count each classified PR once, by its latest "
        "classification; they add up to the classified PRs.</p>"
        '<div class="cards">'
        + "".join(
            f'<div class="card" data-card="{esc(k)}"><b>{esc(v)}</b>{esc(label)}</div>'
            for label, v, k in cards
        )
        + "</div>"
    )


def _breaker(model: ReadModel, root: str) -> str:
    bf = model.breaker
    if bf is None:
        return (
            '<p class="bad" id="breaker">breaker state unreadable (see banner): '
            "treat it as tripped</p>"
        )
    st = bf.state
    window = st.in_window(model.now, timedelta(hours=model.config.breaker.window_hours))
    if st.tripped:
        head = (
            f'<p class="bad" id="breaker">TRIPPED since {when(st.tripped_at)}: no auto-merges</p>'
        )
    else:
        head = '<p class="ok" id="breaker">closed (auto-merges allowed)</p>'
        if st.reset_by:
            head += f"<p>last reset by {esc(st.reset_by)} at {when(st.reset_at)}</p>"
    if bf.incident_issue:
        state = "open" if bf.incident_issue.get("open") else "closed"
        head += (
            f"<p>incident issue ({esc(state)}): "
            f"{issue_link(model.config, str(bf.incident_issue.get('number', '')))}</p>"
        )
    head += (
        f"<h2>Open incidents ({len(window)} in the last "
        f"{esc(f'{model.config.breaker.window_hours:g}')} h; trips at "
        f"{model.config.breaker.threshold})</h2>"
    )
    head += table(
        ("at", "kind", "PR", "detail"),
        (
            [when(i.at), esc(i.kind.value), pr_link(model, i.ref, root), esc(i.detail)]
            for i in window
        ),
        id_="incidents",
    )
    history = model.breaker_history[-20:]
    head += "<h2>Breaker history</h2>" + table(
        ("at", "event", "who / why"),
        (
            [
                when(r.get("ts")),
                esc(str(r.get("action", "")).replace("breaker.", "breaker ").replace("_", " ")),
                esc(r.get("actor") or r.get("by") or r.get("reason") or r.get("detail") or ""),
            ]
            for r in reversed(history)
        ),
        id_="breaker-history",
    )
    return head


def _audit(model: ReadModel) -> str:
    rows = []
    for a in model.audit:
        r = a.report
        status = (
            f'<span class="ok">verified: {r.count} entries, chain whole</span>'
            if r.ok
            else f'<span class="bad">BROKEN at line {esc(r.line)}: {esc(r.reason)}</span>'
        )
        if a.anchor_seq is None:
            anchor = '<span class="muted">no digest anchor yet</span>'
        elif a.anchor_problems:
            anchor = (
                f'<span class="bad">{esc(a.anchor_source)} seq={a.anchor_seq}: does not hold</span>'
            )
        else:
            anchor = f'<span class="ok">{esc(a.anchor_source)} seq={a.anchor_seq} holds</span>'
        rows.append([f"<code>{esc(r.path.name)}</code>", status, anchor])
    return table(("log", "chain (verified now)", "last digest anchor"), rows, id_="audit")


def _shadow_section(model: ReadModel, rows: str) -> str:
    """Shadow mode's would-be merges, apart from merges (shown in shadow mode or when any)."""
    if not model.would_merges and model.config.mode != "shadow":
        return ""
    return (
        "<h2>Would merge in shadow mode: not merged (newest 20)</h2>"
        '<p class="muted">Shadow mode merges nothing: these PRs would have merged in '
        "enforce mode. Each PR is listed once; one that merged later is under Merges.</p>" + rows
    )


def render(model: ReadModel, root: str = "") -> str:
    """The Overview body."""
    m = model.metrics
    tick = (
        f'<p id="last-tick">last tick {when(m.get("last_tick_at", "never"))} '
        f"({esc(age(str(m.get('last_tick_at', '')), model.now))} ago), took "
        f"{esc(m.get('last_tick_seconds', '?'))} s; errors in it: "
        f"{esc(m.get('errors_last_tick', 0))}; mode {esc(m.get('mode', model.config.mode))}</p>"
        if m.get("last_tick_at")
        else '<p id="last-tick" class="muted">no tick has run yet</p>'
    )
    if m.get("last_targeted_at"):  # the change detector's targeted ticks, counted apart
        tick += (
            f'<p id="targeted-ticks">targeted ticks (changes seen between ticks): '
            f"{esc(m.get('targeted_ticks', '?'))}, the last {when(m.get('last_targeted_at'))} "
            f"({esc(age(str(m.get('last_targeted_at', '')), model.now))} ago), took "
            f"{esc(m.get('last_targeted_seconds', '?'))} s; PRs merged by them: "
            f"{esc(m.get('targeted_merged', 0))}</p>"
        )
    if any(p.file.endswith(METRICS_FILE) for p in model.problems):
        tick = (
            '<p id="last-tick" class="bad">last tick unknown: tick metrics missing or '
            "unreadable (see banner)</p>"
        )

    pending = table(
        ("PR", "title", "kind", "issue", "opened", "age"),
        (
            [
                pr_link(model, b.ref, root),
                esc(b.title),
                esc(b.kind),
                issue_link(model.config, b.issue) if b.issue else "",
                when(b.at),
                esc(age(b.at, model.now)),
            ]
            for b in model.pending
        ),
        id_="pending",
    )
    decided = table(
        ("decided", "PR", "outcome", "by", "issue"),
        (
            [
                when(b.at),
                pr_link(model, b.ref, root),
                esc(b.status.replace("_", " ")),
                esc(b.by),
                issue_link(model.config, b.issue) if b.issue else "",
            ]
            for b in reversed(model.decided[-20:])
        ),
        id_="decided",
    )
    merges = table(
        ("merged", "PR", "quadrant"),
        (
            [when(ts), pr_link(model, ref, root), quadrant(q)]
            for ts, ref, q in reversed(model.merges[-20:])
        ),
        id_="merges",
    )
    would = table(
        ("judged", "PR", "quadrant", "mode"),
        (
            [when(ts), pr_link(model, ref, root), quadrant(q), '<span class="bad">shadow</span>']
            for ts, ref, q in reversed(model.would_merges[-20:])
        ),
        id_="would-merge",
    )
    return (
        tick
        + _cards(model)
        + "<h2>Classifications per day (last 30 days, UTC)</h2>"
        + quadrant_bars(model.days)
        + "<h2>Ballots waiting for an owner</h2>"
        + pending
        + "<h2>Ballots decided (newest 20)</h2>"
        + decided
        + "<h2>Merges (newest 20)</h2>"
        + merges
        + _shadow_section(model, would)
        + "<h2>Circuit breaker</h2>"
        + _breaker(model, root)
        + "<h2>Audit chain</h2>"
        + _audit(model)
    )
