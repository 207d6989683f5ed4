"""Random human review sampling (SPEC 6.6) and the passive-review auto-close rule (SPEC 3)."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from capdaemon.decide._common import aware, check_share


def sample_point(repo: str, pr_number: int, head_sha: str) -> float:
    """A uniform value in [0, 1) from sha256 of "owner/repo#N@sha" (repo and sha lower-cased)."""
    key = f"{repo.lower()}#{pr_number}@{head_sha.lower()}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2**64


def sampled(repo: str, pr_number: int, head_sha: str, share: float) -> bool:
    """True when this auto-merged PR gets a random-review issue (deterministic, about `share`)."""
    return sample_point(repo, pr_number, head_sha) < check_share(share)


def passive_close_due(
    opened_at: datetime, now: datetime, owner_commented: bool, days: float = 7.0
) -> bool:
    """True when a passive review issue should auto-close: old enough, and no owner commented."""
    aware(opened_at, "opened_at")
    aware(now, "now")
    return not owner_commented and now - opened_at >= timedelta(days=days)
