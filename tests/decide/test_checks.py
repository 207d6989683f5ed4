"""L1.C3 check output (SPEC 2.10) and the ballot / passive / one-tap issue texts."""

from __future__ import annotations

from datetime import timedelta

import pytest

from capdaemon.decide.ballot import BallotOutcome, BallotStatus, parse_command
from capdaemon.decide.checks import (
    CheckFacts,
    ballot_issue_body,
    new_round_comment,
    one_tap_issue_body,
    passive_issue_body,
    random_review_body,
    reject_comment,
    render_check,
)
from capdaemon.decide.tiers import OneTapResult, OneTapState, TierDecision
from capdaemon.model import (
    FileStatus,
    FileVerdict,
    Finding,
    Quadrant,
    RuleOutcome,
    RuleResult,
    Severity,
    Verdict,
)

HEAD = "a" * 40


def verdict(q: Quadrant = Quadrant.A, findings=(), n_files: int = 1) -> Verdict:
    """A verdict with n files of quadrant q."""
    files = tuple(
        FileVerdict(f"src/f{i}.py", FileStatus.MODIFIED, q in "CD", q in "BD", q, ("because",))
        for i in range(n_files)
    )
    rules = (RuleOutcome("path_classifier_default", RuleResult.VOTE, q, "paths"),)
    return Verdict(q, f"quadrant {q} reasoning", files, rules, tuple(findings))


def ballot(status: BallotStatus, sha: str = HEAD) -> BallotOutcome:
    """A ballot outcome."""
    return BallotOutcome(status, sha, "by alice")


P0 = Finding("validator_capability_scope", Severity.P0, "no capability")
P1 = Finding("validator_agent_registry", Severity.P1, "unknown model x")
CASES = [
    ("a-ok", verdict(), CheckFacts(HEAD), "success", "Quadrant A: ok"),
    ("b-ok", verdict(Quadrant.B), CheckFacts(HEAD), "success", "Quadrant B: ok"),
    ("c-ok", verdict(Quadrant.C), CheckFacts(HEAD), "success", "Quadrant C: ok"),
    ("d-pending", verdict(Quadrant.D), CheckFacts(HEAD), "failure", "waiting for an owner"),
    (
        "d-approved",
        verdict(Quadrant.D),
        CheckFacts(HEAD, ballot=ballot(BallotStatus.APPROVED)),
        "success",
        "approved by",
    ),
    (
        "d-approved-old-head",
        verdict(Quadrant.D),
        CheckFacts(HEAD, ballot=ballot(BallotStatus.APPROVED, "b" * 40)),
        "failure",
        "not this head",
    ),
    (
        "d-deferred",
        verdict(Quadrant.D),
        CheckFacts(HEAD, ballot=ballot(BallotStatus.DEFERRED)),
        "failure",
        "deferred",
    ),
    (
        "d-rejected",
        verdict(Quadrant.D),
        CheckFacts(HEAD, ballot=ballot(BallotStatus.REJECTED)),
        "failure",
        "rejected",
    ),
    ("p0", verdict(findings=[P0]), CheckFacts(HEAD), "failure", "P0 validator_capability_scope"),
    ("p1-passes", verdict(findings=[P1]), CheckFacts(HEAD), "success", "ok"),
    (
        "scope-violation",
        verdict(),
        CheckFacts(HEAD, blocking=("scope violation: cron.json",)),
        "failure",
        "scope violation",
    ),
    ("notes-do-not-fail", verdict(), CheckFacts(HEAD, notes=("breaker tripped",)), "success", "ok"),
    (
        "tier2-pending",
        verdict(),
        CheckFacts(
            HEAD,
            tier=TierDecision(2, ("lockfile",)),
            one_tap=OneTapResult(OneTapState.PENDING, "w"),
        ),
        "failure",
        "one-tap",
    ),
    (
        "tier2-approved",
        verdict(),
        CheckFacts(
            HEAD,
            tier=TierDecision(2, ("lockfile",)),
            one_tap=OneTapResult(OneTapState.APPROVED, "ok", "bob"),
        ),
        "success",
        "ok",
    ),
    (
        "tier3-pending",
        verdict(),
        CheckFacts(HEAD, tier=TierDecision(3, ("CLAUDE.md",))),
        "failure",
        "ballot",
    ),
    (
        "manual-does-not-fail",
        verdict(),
        CheckFacts(HEAD, tier=TierDecision(2, (), "manual")),
        "success",
        "ok",
    ),
    (
        "tier3-floor-under-manual",
        verdict(),
        CheckFacts(HEAD, tier=TierDecision(3, ("CLAUDE.md",), "manual")),
        "failure",
        "ballot",
    ),
    (
        "tier3-floor-under-auto",
        verdict(),
        CheckFacts(HEAD, tier=TierDecision(3, ("CLAUDE.md",), "auto")),
        "failure",
        "ballot",
    ),
    (
        "tier2-skipped-under-auto",
        verdict(),
        CheckFacts(HEAD, tier=TierDecision(2, ("lockfile",), "auto")),
        "success",
        "ok",
    ),
    (
        "manual-d-still-needs-ballot",
        verdict(Quadrant.D),
        CheckFacts(HEAD, tier=TierDecision(1, (), "manual")),
        "failure",
        "waiting",
    ),
]


@pytest.mark.parametrize(
    ("v", "facts", "conclusion", "title"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_check_conclusion_and_title(
    v: Verdict, facts: CheckFacts, conclusion: str, title: str
) -> None:
    """The check concludes success or failure as SPEC 2.10 says, with a telling title."""
    out = render_check(v, facts)
    assert out.conclusion == conclusion and out.success is (conclusion == "success")
    assert title in out.title and len(out.title) <= 120


def test_summary_contents() -> None:
    """The summary shows the quadrant, files table, rules, attention and ballot link."""
    out = render_check(
        verdict(Quadrant.D, findings=[P1]),
        CheckFacts(
            HEAD, ballot=ballot(BallotStatus.PENDING), ballot_url="https://gh/o/bot/issues/3"
        ),
    )
    s = out.summary
    assert "**Quadrant D**" in s
    assert "| path | IR | CR | quadrant | reason |" in s and "src/f0.py" in s
    assert "path\\_classifier\\_default" in s  # escaped
    assert "### Attention (P1)" in s and "unknown model x" in s
    assert "[ballot issue](https://gh/o/bot/issues/3)" in s
    assert "### Blocking" in s


def test_file_table_capped() -> None:
    """The per-file table stops at 200 rows and says how many more."""
    out = render_check(verdict(n_files=250), CheckFacts(HEAD))
    assert "src/f199.py" in out.summary and "src/f200.py" not in out.summary
    assert "…and 50 more files." in out.summary


def test_untrusted_paths_escaped() -> None:
    """A path cannot inject a marker or break the table."""
    evil = FileVerdict("a|b<!-- capdaemon: {} -->.md", FileStatus.ADDED, False, False, Quadrant.A)
    v = Verdict(Quadrant.A, "r", (evil,))
    s = render_check(v, CheckFacts(HEAD)).summary
    assert "<!--" not in s and "a\\|b" in s


def test_ballot_issue_body() -> None:
    """The ballot lists the four options, how to answer, the bound sha and the round."""
    body = ballot_issue_body(
        "o/r#12", "https://gh/o/r/pull/12", "Drop users table", HEAD, 2, verdict(Quadrant.D)
    )
    for text in (
        "/approve A",
        "👍",
        "/approve B",
        "/approve C",
        "/reject",
        "👎",
        HEAD,
        "round 2",
        "o/r#12",
    ):
        assert text in body, text
    assert parse_command(body) is None  # the bot's own text never reads as a command


def test_issue_texts() -> None:
    """Passive, random-review, one-tap, new-round and reject texts say what they must."""
    v = verdict(Quadrant.B)
    assert "7 days" in passive_issue_body(Quadrant.B, "o/r#1", "", "t", v)
    assert "irreversible" in passive_issue_body(Quadrant.C, "o/r#1", "", "t", v)
    with pytest.raises(ValueError):
        passive_issue_body(Quadrant.D, "o/r#1", "", "t", v)
    assert "10%" in random_review_body("o/r#1", "", "t", HEAD, 0.10)
    tap = one_tap_issue_body(
        "o/r#1", "", "t", HEAD, TierDecision(2, ("lockfile x",)), timedelta(hours=24)
    )
    assert "24 h 0 min" in tap or "1 d 0 h" in tap
    assert "lockfile x" in tap
    assert "round 3" in new_round_comment("b" * 40, HEAD, 3)
    rej = reject_comment(BallotOutcome(BallotStatus.REJECTED, HEAD, "r"))
    assert "rejected" in rej and parse_command(rej) is None
