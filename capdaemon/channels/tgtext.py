"""The texts of the Telegram one-tap messages: the request, and what it becomes once decided.

Every text after the request keeps the PR and its title on its first line, so a chat read
later still says which PR each outcome was about.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

BALLOT = "it is now a full owner ballot on GitHub"


def plural(n: object, one: str, many: str | None = None) -> str:
    """`1 file`, `2 files`, `? files` (an unknown count reads as plural)."""
    word = one if n == 1 else (many or f"{one}s")
    return f"{n} {word}"


def deadline(expires: str) -> str:
    """An ISO UTC deadline to the second: `2026-12-01 15:40:12 UTC`."""
    return f"{expires[:19].replace('T', ' ')} UTC"


def head(ref: str, title: str) -> str:
    """The first line of every outcome: the PR and its title."""
    return f"{ref}: {title}" if title else ref


def request_text(
    ref: str,
    title: str,
    quadrant: str,
    head_sha: str,
    tier: Mapping[str, Any],
    issue: str,
    expires: str,
) -> str:
    """The message owners see: PR, quadrant, tier reasons, files and size, deadline."""
    reasons = "\n".join(f"• {r}" for r in tier.get("reasons") or ()) or "• tier 2"
    size = (
        f"{plural(tier.get('files', '?'), 'file')}, "
        f"{plural(tier.get('lines', '?'), 'changed line')}"
    )
    return (
        f"One-tap approval: {ref}\n{title}\n"
        f"Quadrant {quadrant or '?'}, tier {tier.get('tier', 2)}:\n{reasons}\n"
        f"{size}; head {head_sha[:7]}\n"
        f"Record: {issue}\n"
        f"Approve or reject before {deadline(expires)}; after that it becomes a full owner "
        "ballot on GitHub."
    )


def approved(ref: str, title: str, login: str, head_sha: str) -> str:
    """After an approve tap, until the merge."""
    return f"Approved: {head(ref, title)}\nby {login} on Telegram; merging head {head_sha[:7]}."


def rejected(ref: str, title: str, login: str) -> str:
    """After a reject tap."""
    return f"Rejected: {head(ref, title)}\nby {login} on Telegram; {BALLOT}."


def merged(ref: str, title: str, login: str, head_sha: str) -> str:
    """Once the approved head is merged."""
    return f"Merged: {head(ref, title)}\nhead {head_sha[:7]}, approved by {login} on Telegram."


def expired(ref: str, title: str, reason: str) -> str:
    """The one-tap ran out (or was escalated): said once, never twice."""
    why = reason.strip().rstrip(".") or "no owner decision in time"
    tail = "" if "ballot" in why else f"; {BALLOT}"
    return f"Closed: {head(ref, title)}\n{why}{tail}."


def void(ref: str, title: str, why: str) -> str:
    """The request no longer counts (the PR closed, its head moved)."""
    return f"Void: {head(ref, title)}\n{why}"
