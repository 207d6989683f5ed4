"""The rollup sweep's pure part: which repos a sweep of waiting heads' check rollups flags.

No list GitHub offers moves when a check run completes, so in a burst the change detector
asks, in one GraphQL query per many heads (capdaemon.forge.rollups), the check rollup state of
every head whose merge waits only on checks. A repo is flagged (the detector then runs a
targeted tick for it, which decides from its own reads: a sweep never merges anything) when
one of its heads' state differs from the last sweep's, or a head seen for the first time is
already terminal (the tick that put it in the waiting set saw it incomplete). A head seen
unchanged is never flagged again: a PR whose required check is missing while the others
passed costs one targeted tick, not one per sweep.
"""

from __future__ import annotations

from collections.abc import Mapping

Head = tuple[str, str]  # (repo, head sha)

# StatusState values that say every check has concluded (PENDING, EXPECTED and "", no check
# at all, do not)
TERMINAL = frozenset({"SUCCESS", "FAILURE", "ERROR"})


def rollups_flagged(old: Mapping[Head, str], new: Mapping[Head, str]) -> set[str]:
    """The repos of the heads in `new` whose state moved since `old` (the last sweep's), or
    that are new and already terminal (pure)."""
    out: set[str] = set()
    for head, state in new.items():
        before = old.get(head)
        if before != state and (before is not None or state in TERMINAL):
            out.add(head[0])
    return out
