"""`why` folds a record that repeats the last one of its kind, and nothing else."""

from __future__ import annotations

from capdaemon.story import tell


def _classified(ts: str, head: str, quadrant: str = "A") -> dict[str, object]:
    return {"ts": ts, "seq": int(ts[-3:-1]), "pr": "o/r#1", "head_sha": head * 40,
            "quadrant": quadrant, "reasoning": "r", "fingerprint": ts}  # fmt: skip


def test_a_repeat_at_the_same_head_is_folded_a_change_is_not() -> None:
    """Same head and verdict twice: one line plus "re-checked"; a new head, a new verdict at
    the same head, and a head that comes back after another are each told."""
    records = [
        _classified("2026-05-25T03:00:01Z", "a"),
        _classified("2026-05-25T03:00:02Z", "a"),  # folded
        _classified("2026-05-25T03:00:03Z", "a", "D"),  # the verdict changed: told
        _classified("2026-05-25T03:00:04Z", "b", "D"),  # a push: told
        _classified("2026-05-25T03:00:05Z", "a", "D"),  # back to a: told, not folded away
    ]
    lines = tell(records)
    told = [ln for ln in lines if "  classified " in ln]
    assert [ln.split()[2:5] for ln in told] == [
        ["A", "at", "a" * 10 + ":"],
        ["D", "at", "a" * 10 + ":"],
        ["D", "at", "b" * 10 + ":"],
        ["D", "at", "a" * 10 + ":"],
    ]
    notes = [ln.strip() for ln in lines if "re-checked" in ln]
    assert notes == [
        "re-checked 1 more time(s) at the same head with the same outcome (a check run or a "
        "label changed), last at 2026-05-25T03:00:02Z"
    ]
