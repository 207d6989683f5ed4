"""Changes a detector sees while a full tick runs, served inside that tick at its safe points.

A full tick holds the tick lock for tens of seconds at scale; a change the change detector
sees meanwhile (`TickDeps.changed`, its hand-over) would wait for the tick's end. Instead the
full tick takes it at safe points: a repo it has not decided yet is listed again before its
PRs are decided (capdaemon.daemon.polling.poll); a repo it already decided is served apart,
between two repos of steps 1-2 or between two later steps, by the targeted steps on a context
of their own (Ticker.serve_changed) — under the same lock, on the same thread (never a second
writer), on what is read then — and the rest of the full tick leaves that repo alone
(`TickContext.hand_off`), so nothing it read earlier is acted on or recorded over the newer.
"""

from __future__ import annotations

from collections.abc import Collection

from capdaemon.daemon.core.context import Tick


def serve_changed(t: Tick, among: Collection[str] | None = None) -> frozenset[str]:
    """A safe point of a full tick: the repos (of `among`; None: any) a change detector saw
    change, and those owed since a fresh list failed, served apart now; the repos served.
    The callers call it only once steps 1-2 have decided a repo (before that, their own list
    reads come after the change); a targeted tick serves nothing. A stop request is honoured
    first, leaving the changes with the detector."""
    if t.only is not None:
        return frozenset()
    t.check_stop()
    supervised = {rc.name for rc in t.deps.config.repos}
    owed = t.ctx.owed if among is None else t.ctx.owed & set(among)
    repos = frozenset((t.deps.changed.take(among) | owed) & supervised)
    t.ctx.owed -= owed
    if repos:
        t.ctx.hand_off(repos)
        t.host.serve_changed(repos)
    return repos
