"""What `capdaemon tick --once` prints: a few plain lines on a terminal, one JSON line otherwise."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any


def _refs(items: Any) -> str:
    refs = [str(x) for x in items] if isinstance(items, list) else []
    return f" ({', '.join(refs[:5])}{', …' if len(refs) > 5 else ''})" if refs else ""


def summary_lines(report: Mapping[str, Any]) -> list[str]:
    """The tick's report for a person: counts, the PRs they name, and every error."""

    def n(key: str) -> int:
        value = report.get(key)
        return len(value) if isinstance(value, list | dict) else int(value or 0)

    merged_key = "would_merge" if report.get("would_merge") else "merged"
    merged_word = "would merge (shadow)" if merged_key == "would_merge" else "merged"
    lines = [
        f"tick done in {float(report.get('seconds') or 0):.2f} s: {n('prs_seen')} PRs seen, "
        f"{n('classified')} classified{_refs(report.get('classified'))}, "
        f"{n(merged_key)} {merged_word}{_refs(report.get(merged_key))}, "
        f"{n('issues')} issues opened, {n('errors')} errors",
        f"GitHub: {n('api_requests')} API requests, {report.get('api_remaining', '?')} left"
        + (f"; backlog: {n('backlog_left')} PRs left for later ticks" if n("backlog_left") else ""),
    ]
    if report.get("interrupted"):
        lines.append("interrupted: the tick stopped early and continues next time")
    lines += [f"error: {e}" for e in report.get("errors") or ()]
    lines.append("(--json prints this summary as one JSON line, as it is printed off a terminal)")
    return lines


def render(report: Mapping[str, Any], *, json_asked: bool) -> str:
    """One JSON line (asked for, or stdout is not a terminal: scripts, cron, a pipe), or the
    lines for a person."""
    if json_asked or not sys.stdout.isatty():
        return json.dumps(report, sort_keys=True)
    return "\n".join(summary_lines(report))
