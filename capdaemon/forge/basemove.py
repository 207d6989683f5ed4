"""A PR's compare carried to a new base commit when the merge base provably did not move.

GitHub's three-dot compare `base...head` lists the files changed and the commits from the merge
base of `base` and `head` to `head`. When the base branch moves from X to Y and the head H
stays, the compare of Y...H is the compare of X...H whenever the merge base did not change,
and that holds when no commit new on the base (reachable from Y, not from X) is an ancestor of
H: every common ancestor of Y and H is then one of X and H, so both pairs have the same
common ancestors and the same best ones.

Only what is known for certain is used: a chain of single-parent commits Y → … → X (a squash
or rebase merge, or a direct commit, whose parents capdaemon read: its own merges' parents come
with the base check right after them), and a complete commit list of X...H (every commit
reachable from H and not from X is in it). A commit of the chain that is in that list (H was
built on it) or any other shape (a merge commit, parents never read, a list cut at 250 commits)
carries nothing: the compare is read as before.
"""

from __future__ import annotations

from collections.abc import Callable

from capdaemon.forge.session import Compared

MAX_STEPS = 50  # base commits walked back at most (each a cache lookup, no request)


def carried_compare(
    base: str,
    head: str,
    parents: Callable[[str], tuple[str, ...] | None],
    compared: Callable[[str, str], Compared | None],
) -> Compared | None:
    """The known compare of an older base with `head` that stands for `base...head` (pure:
    `parents` and `compared` are cache lookups); None when it cannot be proven to."""
    chain: list[str] = []
    cur = base
    for _ in range(MAX_STEPS):
        got = parents(cur)
        if got is None or len(got) != 1:
            return None
        chain.append(cur)
        cur = got[0]
        hit = compared(cur, head)
        if hit is None:
            continue
        listed = [c.get("sha") for c in hit["commits"]]
        if hit["total_commits"] != len(listed) or hit["merge_base"] is None:
            return None  # the list is cut: an ancestor of the head may be missing from it
        if any(sha in listed for sha in chain):
            return None  # the head was built on a commit new on the base
        return hit
    return None
