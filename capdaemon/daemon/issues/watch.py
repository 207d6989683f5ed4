"""Which of the decision repo's issue listings a tick reads, and where its changes list starts.

A reaction (a 👍 vote) moves no issue's update time, so the issues whose reactions count —
open ballots (`decision:pending-owner`, deferred ones too) and pending one-tap requests
(`decision:one-tap`) — are listed in full by label every tick. Everything else capdaemon
reads from its open issues (an edit of a passive review issue's text, a close) moves the
update time, so one changes list — every issue, of any state, updated at or after a kept
`since` — shows it. The `since` stays put while the list is short (a stable URL keeps its
ETag: a free 304 while nothing changes) and moves on only past issues a tick has seen and
found as capdaemon wrote them, so nothing it would have caught is ever left behind. Without a
kept `since` (under a page of open issues, the first tick, a corrupt file, another decision
repo) every open issue is listed, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from datetime import timedelta
from pathlib import Path

from capdaemon.decide.labels import IssueKind, Label
from capdaemon.forge.types import IssueList, IssueListing
from capdaemon.state import StateError
from capdaemon.stores.issuewatch import IssueWatch, read_watch, write_watch
from capdaemon.stores.prrecord import PRRecord, PRState
from capdaemon.timefmt import parse_utc, utc_iso

FULL_LIST_BELOW = 100  # fewer open issues than this fit one page: all are listed (1 request)
ADVANCE_AT = 50  # the changes list's `since` moves on once the list carries this many issues
MARGIN = timedelta(seconds=1)  # `since` is set this far before the newest update it covers


def kept_since(state_dir: Path, repo: str | None) -> str | None:
    """The kept `since` of `repo`'s changes list (None: list every open issue). StateError
    when the file is corrupt (the caller lists every open issue and reports it)."""
    watch = read_watch(state_dir)
    if repo is None or watch is None or watch.repo != repo:
        return None
    return watch.since


def safe_since(state_dir: Path, repo: str | None) -> str | None:
    """`kept_since`, None when the file is corrupt (the tick reports that one)."""
    try:
        return kept_since(state_dir, repo)
    except StateError:
        return None


def reaction_issues(
    records: Iterable[PRRecord], pending_one_tap: Callable[[PRRecord], int | None]
) -> tuple[set[int], set[int]]:
    """(the open ballots of open PRs, the one-tap issues of open PRs' heads waiting for a 👍)."""
    ballots: set[int] = set()
    one_taps: set[int] = set()
    for rec in records:
        if rec.state != PRState.OPEN:
            continue
        info = rec.issues.get(IssueKind.BALLOT.value)
        if info and info.open:
            ballots.add(info.number)
        tap = pending_one_tap(rec)
        if tap is not None:
            one_taps.add(tap)
    return ballots, one_taps


def reaction_needs(
    records: Iterable[PRRecord], pending_one_tap: Callable[[PRRecord], int | None]
) -> tuple[bool, bool]:
    """(an open PR's ballot is open, an open PR's head waits for a one-tap 👍)."""
    ballots, one_taps = reaction_issues(records, pending_one_tap)
    return bool(ballots), bool(one_taps)


def unlabelled(listing: IssueListing, since: str | None, numbers: Collection[int]) -> set[int]:
    """Of `numbers` (issues whose reactions count), those the changes list carried open but no
    label listing did (someone took the label off): the changes list must keep showing them,
    so its `since` is held before them (pure; none without a `since`: no label listing)."""
    if since is None:
        return set()
    return {
        n
        for n, state, _ in listing.changed
        if state == "open" and n in numbers and n not in listing.by_label
    }


def wanted_lists(since: str | None, ballots: bool, one_taps: bool) -> tuple[IssueList, ...]:
    """The listings to read, the changes list first (pure). Every open issue when there is
    no `since` (its rollups carry every reaction); else the changes list and, by label, the
    open issues whose reactions count."""
    first = IssueList(since=since)
    if since is None:
        return (first,)
    out = [first]
    if ballots:
        out.append(IssueList(label=Label.PENDING_OWNER.value))
    if one_taps:
        out.append(IssueList(label=Label.ONE_TAP.value))
    return tuple(out)


def next_since(listing: IssueListing, since: str | None, unseen: Collection[int]) -> str | None:
    """Where the next changes list starts (pure). None — every open issue listed — while they
    fit one page; it stays put while the list is short; else it moves to just before the
    newest update listed, but never past an issue in `unseen`
    (one whose text differs from what capdaemon wrote, not restored yet) nor past an issue
    without an update time; never backwards."""
    if since is None and len(listing.changed) < FULL_LIST_BELOW:
        return None
    if since is not None and len(listing.changed) < ADVANCE_AT:
        return since
    times = [at for _, _, at in listing.changed]
    known = [at for at in times if at is not None]
    if not known or len(known) < len(times):
        return since
    held = [at for n, _, at in listing.changed if n in unseen and at is not None]
    new = min([max(known), *held]) - MARGIN
    if since is not None and new <= parse_utc(since, "since"):
        return since
    return utc_iso(new.replace(microsecond=0))


def keep_since(state_dir: Path, repo: str, old: str | None, new: str | None) -> None:
    """Write the new `since` when it moved (never over a corrupt file: the caller does not
    call this after a StateError)."""
    if new is not None and new != old:
        write_watch(state_dir, IssueWatch(repo, new))
