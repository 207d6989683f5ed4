"""The Trends page: merges per day, time to decision per ballot, rejections per agent, and the
reaction times (event → action) per kind."""

from __future__ import annotations

import statistics
from datetime import date, datetime, timedelta

from capdaemon.dashboard.charts import bars
from capdaemon.dashboard.html import esc, table, when
from capdaemon.dashboard.links import story_href
from capdaemon.dashboard.logfold import day_of
from capdaemon.dashboard.readmodel import ReadModel
from capdaemon.decide.reaction import (
    KEEP,
    SAMPLES_KEY,
    format_seconds,
    parse_samples,
    period_stats,
)
from capdaemon.filenames import METRICS_FILE
from capdaemon.timefmt import parse_utc

RANGES = {"7d": 7, "30d": 30, "90d": 90, "365d": 365}
DEFAULT_RANGE = "30d"


def _parse(ts: str) -> datetime | None:
    try:
        return parse_utc(ts, "ts")
    except ValueError:
        return None


def _range_links(chosen: str, root: str) -> str:
    links = (
        f'<a href="{root}trends.html?range={k}"{" class=on" if k == chosen else ""}>'
        f"last {n} days</a>"
        for k, n in RANGES.items()
    )
    return f'<p class="ranges" id="ranges">{"".join(links)}</p>'


def _hours(seconds: float) -> str:
    """A duration as minutes, hours or days, whichever reads best."""
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _decisions(
    model: ReadModel, start: date
) -> tuple[list[tuple[float, str, str, str]], dict[str, list[int]]]:
    """Ballots decided since `start`: (seconds to decide, PR, outcome, when) for those whose
    opening is known, and per agent (the PR's author) [decided, rejected]."""
    decisions: list[tuple[float, str, str, str]] = []
    per_agent: dict[str, list[int]] = {}
    for b in model.decided:
        at, opened = _parse(b.at), _parse(b.opened)
        if at is None or at.date() < start:
            continue
        row = model.by_ref.get(b.ref)
        agent = row.author if row is not None and row.author else "unknown"
        tally = per_agent.setdefault(agent, [0, 0])
        tally[0] += 1
        tally[1] += b.status == "rejected"
        if opened is not None:
            decisions.append(((at - opened).total_seconds(), b.ref, b.status, b.at))
    return decisions, per_agent


def _reactions(model: ReadModel, days: int) -> str:
    """p50/p95/max per kind of the actions in the range, from tick_metrics.json."""
    try:
        samples = parse_samples(model.metrics.get(SAMPLES_KEY))
    except ValueError as exc:
        return f'<p id="reaction-summary" class="bad">{esc(METRICS_FILE)}: {esc(exc)}</p>'
    end = model.now + timedelta(seconds=1)
    stats = period_stats(samples, end - timedelta(days=days), end)
    rows = (
        [esc(s.label), str(s.n), *(esc(format_seconds(v)) for v in (s.p50, s.p95, s.max))]
        for s in stats
    )
    return (
        '<p id="reaction-summary" class="muted">From the event that caused each action (a '
        "PR opened or pushed, an owner's vote, a check run completing) to the action; the "
        f"last {KEEP.days} days are kept.</p>"
        + table(("action", "actions", "p50", "p95", "max"), rows, id_="reactions")
    )


def render(model: ReadModel, choice: str = "", root: str = "") -> str:
    """The Trends body for the chosen range (`7d`, `30d`, `90d`, `365d`)."""
    chosen = choice if choice in RANGES else DEFAULT_RANGE
    days = RANGES[chosen]
    start: date = model.now.date() - timedelta(days=days - 1)
    per_day = {start + timedelta(days=i): 0 for i in range(days)}
    for ts, _, _ in model.merges:
        d = day_of(ts)
        if d is not None and d in per_day:
            per_day[d] += 1
    merges = bars(
        [(d.isoformat(), n) for d, n in per_day.items()],
        id_="merges-chart",
        title=f"Merges per day (last {days} days, UTC)",
    )
    decisions, per_agent = _decisions(model, start)
    secs = [d[0] for d in decisions]
    summary = (
        f"<p id='decision-summary'>ballots decided: {len(secs)}; median "
        f"{_hours(statistics.median(secs))}, longest {_hours(max(secs))}</p>"
        if secs
        else "<p id='decision-summary' class='muted'>no ballot decided in this range</p>"
    )
    decision_rows = (
        [
            when(ts),
            f'<a href="{esc(root + story_href(ref))}">{esc(ref)}</a>',
            esc(status),
            esc(_hours(s)),
        ]
        for s, ref, status, ts in sorted(decisions, key=lambda d: d[3], reverse=True)[:50]
    )
    agents = (
        [esc(a), str(n), str(r), f"{100 * r / n:.0f}%"]
        for a, (n, r) in sorted(per_agent.items(), key=lambda kv: (-kv[1][1] / kv[1][0], kv[0]))
    )
    return (
        _range_links(chosen, root)
        + f"<h2>Merges per day (last {days} days, UTC)</h2>"
        + merges
        + "<h2>Time to decision per ballot</h2>"
        + summary
        + table(("decided", "PR", "outcome", "time to decision"), decision_rows, id_="decisions")
        + f"<h2>Reaction times (last {min(days, KEEP.days)} days)</h2>"
        + _reactions(model, days)
        + "<h2>Rejection rate per agent (ballots decided in range)</h2>"
        + table(
            ("agent", "ballots decided", "rejected", "rejection rate"), agents, id_="rejections"
        )
    )
