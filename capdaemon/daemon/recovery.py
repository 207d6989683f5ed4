"""The bot's own revert PRs, recognised exactly: the revert commit the bot pushed, by the bot."""

from __future__ import annotations

from typing import Any

from capdaemon.daemon import safety
from capdaemon.daemon.tasks import CapabilityVerdict
from capdaemon.model import PRSnapshot


def bot_revert_of(t: Any, snap: PRSnapshot) -> str | None:
    """The merge sha this PR reverts when it is the bot's own revert PR at exactly the revert
    commit the bot made (after a failed probe of a merge the bot made); else None.

    Any other head (a push onto the revert branch), another author, or a PR the bot did not
    open as a revert is not recognised: it needs what every PR needs."""
    if not snap.head_sha or snap.author.lower() != str(t.bot_login).lower():
        return None
    for r in reversed(safety.store(t)["reverts"]):  # the newest revert the bot opened as it
        pr = str(r.get("pr", ""))
        if r.get("revert_pr") == snap.number and pr.rpartition("#")[0].lower() == snap.repo.lower():
            if r.get("revert_sha") != snap.head_sha or not r.get("merge_sha"):
                return None
            return str(r["merge_sha"])
    return None


def revert_capability(merge_sha: str) -> CapabilityVerdict:
    """The capability verdict of the bot's verified revert PR: no agent task is needed."""
    return CapabilityVerdict(
        None, notes=(f"the bot's own revert of merge {merge_sha}: no agent task needed",)
    )
