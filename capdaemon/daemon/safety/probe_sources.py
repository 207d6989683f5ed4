"""Which checks on a merge commit the post-merge probe counts, and reporting the ones it doesn't."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from capdaemon.audit import AuditLog
from capdaemon.config import Config
from capdaemon.daemon.safety.common import TickReads
from capdaemon.decide.merge import RequiredCheck
from capdaemon.decide.probe import ProbeWatch, red, trusted_probe_checks
from capdaemon.logging import get_logger
from capdaemon.model import CheckRun

log = get_logger("capdaemon.probe")
UNTRUSTED_ACTION = "probe.untrusted_status"


def split_checks(
    config: Config,
    reads: TickReads,
    bot_login: str,
    watch: ProbeWatch,
    checks: list[CheckRun],
) -> tuple[list[CheckRun], list[CheckRun]]:
    """(counted, not counted): the merge gate's trust (App check runs, pins of the base
    branch's required checks and the repo's extra checks) plus statuses an owner or the bot
    posted. Reading the protection may raise ForgeError (the probe is retried next tick)."""
    rc = config.repo(watch.repo)
    required: list[RequiredCheck] = []
    if rc is not None:
        required += reads.required_checks(rc)
        required += [RequiredCheck.of(c, apps_only=True) for c in rc.extra_checks]
    creators = sorted({c.creator for c in checks if c.app_id is None and c.creator})
    trusted = set(reads.owners(watch.repo, creators)) | {bot_login.lower()}
    return trusted_probe_checks(checks, required, trusted)


def untrusted_note(
    actions_log: AuditLog,
    raw: dict[str, Any],
    watch: ProbeWatch,
    untrusted: list[CheckRun],
    now: datetime,
) -> str:
    """Audit (once per status) the red statuses the probe did not count; a sentence for the
    incident ("" when there are none). Remembered on the watch's JSON (`raw`)."""
    bad = red(untrusted)
    if not bad:
        return ""
    described = sorted({f"{c.name} (status by {c.creator or 'unknown'})" for c in bad})
    seen = set(raw.get("untrusted_reported") or ())
    new = sorted({str(c.id) for c in bad} - seen)
    if new:
        raw["untrusted_reported"] = sorted(seen | set(new))
        actions_log.append(
            {
                "action": UNTRUSTED_ACTION,
                "pr": watch.ref,
                "merge_sha": watch.merge_sha,
                "statuses": described,
                "counted": False,
                "reason": "posted by someone the merge gate does not trust (not an owner, "
                "not an App check run): reported, not counted toward the breaker",
            },
            now=now,
        )
        log.warning("probe.untrusted_status", pr=watch.ref, statuses=described)
    return f"; not counted (statuses from untrusted sources): {', '.join(described)}"
