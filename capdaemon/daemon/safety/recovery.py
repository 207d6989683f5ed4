"""The bot's own revert PRs, recognised exactly: the revert commit the bot pushed, by the bot."""

from __future__ import annotations

from capdaemon.daemon.polling.tasks import CapabilityVerdict
from capdaemon.daemon.safety.probes import Probes
from capdaemon.model import PRSnapshot


def bot_revert_of(probes: Probes, bot_login: str, snap: PRSnapshot) -> str | None:
    """The merge sha this PR reverts when it is the bot's own revert PR at exactly the revert
    commit the bot made (after a failed probe of a merge the bot made); else None.

    Any other head (a push onto the revert branch), another author, or a PR the bot did not
    open as a revert is not recognised: it needs what every PR needs."""
    if not snap.head_sha or snap.author.lower() != bot_login.lower():
        return None
    r = probes.bot_revert(snap.repo, snap.number)  # the newest revert the bot opened as it
    if r is None or r.get("revert_sha") != snap.head_sha or not r.get("merge_sha"):
        return None
    return str(r["merge_sha"])


def revert_capability(merge_sha: str) -> CapabilityVerdict:
    """The capability verdict of the bot's verified revert PR: no agent task is needed, and
    it is not an agent PR judged as `tiered` (a revert of several files needs no one-tap);
    tier 3 (a revert touching a protected path) still needs an owner's ballot."""
    return CapabilityVerdict(
        None,
        merge_policy="auto",
        notes=(f"the bot's own revert of merge {merge_sha}: no agent task needed",),
    )
