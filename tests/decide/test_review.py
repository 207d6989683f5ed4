"""Random review sampling (SPEC 6.6) and passive-review auto-close (SPEC 3)."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest

from capdaemon.decide.review import passive_close_due, sample_point, sampled

from .factories import at


def test_sample_is_deterministic() -> None:
    """The same PR and head always get the same answer; repo and sha case do not matter."""
    a = sampled("Owner/Repo", 12, "ABCDEF0123", 0.5)
    assert all(sampled("owner/repo", 12, "abcdef0123", 0.5) is a for _ in range(5))
    assert sample_point("Owner/Repo", 12, "ABCDEF0123") == sample_point(
        "owner/repo", 12, "abcdef0123"
    )


def test_sample_point_is_sha256_of_key() -> None:
    """The point is the first 8 bytes of sha256("repo#n@sha") over 2**64."""
    digest = hashlib.sha256(b"o/r#7@abc").digest()
    assert sample_point("o/r", 7, "abc") == int.from_bytes(digest[:8], "big") / 2**64


@pytest.mark.parametrize("share", [0.05, 0.10, 0.5])
def test_share_over_10000_prs(share: float) -> None:
    """Over 10,000 PRs the sampled fraction is close to the share."""
    hits = sum(
        sampled("o/r", n, hashlib.sha1(str(n).encode()).hexdigest(), share) for n in range(10_000)
    )
    assert abs(hits / 10_000 - share) < 0.015


def test_share_edges() -> None:
    """Share 0 never samples; share 1 always does."""
    assert not any(sampled("o/r", n, "s", 0.0) for n in range(200))
    assert all(sampled("o/r", n, "s", 1.0) for n in range(200))


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), True])
def test_bad_share(bad: float) -> None:
    """A share outside [0, 1] is a ValueError."""
    with pytest.raises(ValueError, match="share"):
        sampled("o/r", 1, "s", bad)


CLOSE_CASES = [
    ("six-days", timedelta(days=6, hours=23), False, False),
    ("seven-days", timedelta(days=7), False, True),
    ("owner-commented", timedelta(days=30), True, False),
]


@pytest.mark.parametrize(
    ("age", "commented", "due"), [c[1:] for c in CLOSE_CASES], ids=[c[0] for c in CLOSE_CASES]
)
def test_passive_close_due(age: timedelta, commented: bool, due: bool) -> None:
    """Passive reviews auto-close after 7 days unless an owner commented."""
    assert passive_close_due(at(0), at(0) + age, commented) is due
