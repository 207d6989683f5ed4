"""Built-in rules (SPEC 2.5) and the Agent-Session trailer grammar (SPEC 2.6)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from capdaemon.classify import classify, parse_agent_session, parse_trailers
from capdaemon.classify.trailers import commit_agent_session
from capdaemon.config import Config
from capdaemon.model import CheckRun, LabelEvent, PRSnapshot, RuleResult, Verdict

from .classify_builders import HEAD_TIME, NOW, added, base_config, commit, snapshot

SAFE = added("examples/demo.py")
GOOD = "Agent-Session: claude-code/claude-opus-4.1/sess-0001abcd"


def outcome(verdict: Verdict, rule: str):  # type: ignore[no-untyped-def]
    """The outcome of one named rule."""
    return next(o for o in verdict.rules if o.rule == rule)


def run(snap: PRSnapshot, config: Config | None = None) -> Verdict:
    """Classify with the test config."""
    return classify(snap, config or base_config(), now=NOW)


# ----------------------------------------------------------------------------- trailers
TRAILERS = [
    pytest.param("Subject\n\nBody.\n\nSigned-off-by: A <a@b>\nTask-Id: t-1",
                 [("Signed-off-by", "A <a@b>"), ("Task-Id", "t-1")], id="two-trailers"),
    pytest.param("Agent-Session: a/b/cccccccc", [], id="subject-is-never-trailers"),
    pytest.param("Subject\n\nAgent-Session: a/b/cccccccc\n\n", [("Agent-Session", "a/b/cccccccc")],
                 id="trailing-blank-lines"),
    pytest.param("Subject\n\nAgent-Session: a/b/cccccccc\n\nMore prose.", [],
                 id="not-last-paragraph"),
    pytest.param("Subject\n\nsome prose\nKey: v", [], id="mixed-paragraph-not-trailers"),
    pytest.param("Subject\n\nprose\nprose\nprose\nSigned-off-by: x",
                 [("Signed-off-by", "x")], id="git-25-percent-rule"),
    pytest.param("Subject\n\nKey: a\n  continued", [("Key", "a continued")], id="continuation"),
    pytest.param("Subject\r\n\r\nKey: v\r\n", [("Key", "v")], id="crlf"),
]  # fmt: skip


@pytest.mark.parametrize(("message", "expected"), TRAILERS)
def test_parse_trailers(message: str, expected: list[tuple[str, str]]) -> None:
    """Trailers come from the last paragraph, per git's rules."""
    assert parse_trailers(message) == expected


SESSIONS = [
    pytest.param("claude-code/claude-opus-4.1/sess-0001abcd", True, id="good"),
    pytest.param("codex/gpt-5:high/01234567", True, id="colon-in-model"),
    pytest.param("  aider/m/abcdefgh  ", True, id="surrounding-space"),
    pytest.param("Claude/m/abcdefgh", False, id="uppercase-tool"),
    pytest.param("a/m/short", False, id="session-too-short"),
    pytest.param("a/m/" + "x" * 65, False, id="session-too-long"),
    pytest.param("a/m", False, id="two-parts"),
    pytest.param("a/m/abcdefgh/extra", False, id="four-parts"),
    pytest.param("a/-m/abcdefgh", False, id="model-leading-dash"),
    pytest.param("a/m/abc defgh", False, id="space-in-session"),
    pytest.param("", False, id="empty"),
]


@pytest.mark.parametrize(("value", "ok"), SESSIONS)
def test_parse_agent_session(value: str, ok: bool) -> None:
    """`<tool>/<model>/<session-id>` with the SPEC 2.6 character classes."""
    assert (parse_agent_session(value) is not None) is ok


def test_agent_id() -> None:
    """The agent id is tool/model."""
    s = parse_agent_session("claude-code/opus/abcdefgh")
    assert s is not None and s.agent_id == "claude-code/opus"


MESSAGES = [
    pytest.param(f"Fix\n\n{GOOD}", "A", None, id="valid-trailer"),
    pytest.param("Fix\n\nHuman commit.", "A", None, id="human-commit"),
    pytest.param("Fix\n\nAgent-Session: not a session", "D", "has 1 part(s)", id="malformed"),
    pytest.param(
        "Fix\n\nagent-session: x/y/zz",
        "D",
        "session id 'zz' (2 characters)",
        id="malformed-lowercase-key",
    ),
    pytest.param(f"Fix\n\n{GOOD}\n{GOOD}", "D", "2 Agent-Session", id="duplicate"),
    pytest.param(f"Fix\n\n{GOOD}\nAGENT-SESSION: a/b/cccccccc", "D", "2 Agent-Session",
                 id="duplicate-other-case"),
    pytest.param(f"Fix\n\nprose line\n{GOOD}", "D", "outside a valid trailer block",
                 id="hidden-in-prose-paragraph"),
    pytest.param(f"Fix\n\n{GOOD}\n\nLater prose.", "A", None, id="not-in-last-paragraph"),
]  # fmt: skip


@pytest.mark.parametrize(("message", "expected", "why"), MESSAGES)
def test_agent_session_invalid(message: str, expected: str, why: str | None) -> None:
    """A malformed or duplicate Agent-Session trailer makes the PR D."""
    v = run(snapshot(SAFE, commits=[commit(message)]))
    assert v.quadrant.value == expected, v.reasoning
    o = outcome(v, "agent_session_invalid")
    if why is None:
        assert o.result is RuleResult.ABSTAIN
    else:
        assert why in o.reason


def test_commit_agent_session_human() -> None:
    """No trailer at all is a human commit, not malformed."""
    assert commit_agent_session("Just a subject") == (None, None)


# ----------------------------------------------------------------------------- judgments
def judgment(
    text: str = "Quadrant: D",
    slug: str | None = "capdaemon-judge",
    app_id: int | None = 4242,
    status: str = "completed",
    minutes: int = 0,
    run_id: int = 1,
) -> CheckRun:
    """A classifier-judgment check run."""
    return CheckRun(
        name="classifier-judgment",
        status=status,
        conclusion="success" if status == "completed" else None,
        app_slug=slug,
        app_id=app_id,
        output_summary=text,
        completed_at=NOW - timedelta(minutes=60 - minutes) if status == "completed" else None,
        id=run_id,
    )


JUDGMENTS = [
    pytest.param([judgment("Quadrant: D")], "D", "vote", id="canonical-D"),
    pytest.param([judgment("**Quadrant:** B")], "B", "vote", id="markdown-bold"),
    pytest.param([judgment("Quadrant: A")], "A", "vote", id="canonical-A-cannot-lower"),
    pytest.param([judgment("no verdict here")], "A", "abstain", id="unparseable"),
    pytest.param([judgment("Quadrant: D", status="in_progress")], "A", "abstain",
                 id="not-completed"),
    pytest.param([judgment("Quadrant: B", minutes=0, run_id=1),
                  judgment("Quadrant: C", minutes=5, run_id=2)], "C", "vote", id="newest-wins"),
    pytest.param([judgment("Quadrant: A", slug="evil-app", app_id=666)], "D", "abstain",
                 id="forged-by-other-app"),
    pytest.param([judgment("Quadrant: A", slug="capdaemon-judge", app_id=666)], "D", "abstain",
                 id="slug-matches-id-does-not"),
    pytest.param([judgment("Quadrant: A", slug=None, app_id=None)], "D", "abstain",
                 id="commit-status-without-app"),
]  # fmt: skip


@pytest.mark.parametrize(("runs", "expected", "result"), JUDGMENTS)
def test_published_verdict_and_forgeries(runs: list[CheckRun], expected: str, result: str) -> None:
    """Only the canonical App's judgment votes; any other publisher forces D."""
    v = run(snapshot(SAFE, check_runs=runs))
    assert v.quadrant.value == expected, v.reasoning
    assert outcome(v, "published_verdict").result.value == result


def test_forged_judgment_names_the_publisher() -> None:
    """classifier_publisher_invalid says which App published the forgery."""
    v = run(snapshot(SAFE, check_runs=[judgment(slug="evil-app", app_id=666)]))
    assert "evil-app" in outcome(v, "classifier_publisher_invalid").reason


def test_judgment_without_canonical_app_configured() -> None:
    """With no canonical App configured, every classifier-judgment is a forgery (D)."""
    cfg = base_config(canonical_app=None, canonical_app_id=None)
    v = run(snapshot(SAFE, check_runs=[judgment("Quadrant: A")]), cfg)
    assert v.quadrant.value == "D"


def test_other_check_names_are_ignored() -> None:
    """Check runs with other names do not count as judgments."""
    other = CheckRun(name="ci", status="completed", app_slug="evil", output_summary="Quadrant: D")
    assert run(snapshot(SAFE, check_runs=[other])).quadrant.value == "A"


# ----------------------------------------------------------------------------- simple rules
def test_bot_self_repo_case_insensitive() -> None:
    """A PR to the bot's own repo is D, whatever the case of the name."""
    v = run(snapshot(SAFE, repo="ACME/CapDaemon-Config"))
    assert v.quadrant.value == "D"
    assert outcome(v, "bot_self_repo").result is RuleResult.VOTE


def test_empty_pr() -> None:
    """No files → D."""
    assert run(snapshot()).quadrant.value == "D"


@pytest.mark.parametrize(
    "kw",
    [
        pytest.param({"files_complete": False}, id="files"),
        pytest.param({"commits_complete": False}, id="commits"),
    ],
)
def test_file_list_incomplete(kw: dict[str, bool]) -> None:
    """A truncated file or commit list → D, with the reason."""
    v = run(snapshot(SAFE, incomplete_reason="3,000-file cap", **kw))
    assert v.quadrant.value == "D"
    assert "3,000-file cap" in outcome(v, "file_list_incomplete").reason


# ----------------------------------------------------------------------------- auto-revert
LABEL = "decision:auto-revert"
AFTER = HEAD_TIME + timedelta(minutes=5)
BEFORE = HEAD_TIME - timedelta(minutes=5)


def labeled(actor: str, at=AFTER, action: str = "labeled", label: str = LABEL) -> LabelEvent:  # type: ignore[no-untyped-def]
    """A label event."""
    return LabelEvent(label=label, action=action, actor=actor, at=at)


AUTO_REVERT = [
    pytest.param([labeled("alice")], "coder-bot", "C", "vote", id="owner-verified"),
    pytest.param([labeled("capdaemon[bot]")], "capdaemon[bot]", "C", "vote",
                 id="bot-labels-its-own-revert-pr"),
    pytest.param([labeled("Alice")], "coder-bot", "C", "vote", id="owner-case-insensitive"),
    pytest.param([labeled("coder-bot")], "coder-bot", "A", "PR author", id="self-applied"),
    pytest.param([labeled("mallory")], "coder-bot", "A", "neither an owner", id="not-owner"),
    pytest.param([labeled("alice", at=BEFORE)], "coder-bot", "A", "stale", id="stale"),
    pytest.param([labeled("alice"), labeled("alice", at=AFTER + timedelta(1), action="unlabeled")],
                 "coder-bot", "A", "removed", id="unlabeled-after-labeled"),
    pytest.param([labeled("alice", at=BEFORE),
                  labeled("alice", at=AFTER, action="unlabeled"),
                  labeled("alice", at=AFTER + timedelta(minutes=1))],
                 "coder-bot", "C", "vote", id="relabeled-after-unlabel"),
    pytest.param([labeled("alice"), labeled("mallory", at=AFTER + timedelta(minutes=1))],
                 "coder-bot", "A", "neither an owner", id="latest-labeler-counts"),
    pytest.param([], "coder-bot", "A", "no labeled event", id="no-events"),
    pytest.param([labeled("alice", at=AFTER.replace(tzinfo=None))], "coder-bot", "A",
                 "timezone", id="naive-time"),
]  # fmt: skip


@pytest.mark.parametrize(("events", "author", "expected", "why"), AUTO_REVERT)
def test_auto_revert_marker(events: list[LabelEvent], author: str, expected: str, why: str) -> None:
    """The auto-revert label votes C only when verified; otherwise it is ignored with a reason."""
    v = run(snapshot(SAFE, labels=[LABEL], label_events=events, author=author))
    assert v.quadrant.value == expected, v.reasoning
    o = outcome(v, "auto_revert_marker")
    if why == "vote":
        assert o.result is RuleResult.VOTE
    else:
        assert o.result is RuleResult.ABSTAIN
        assert why in o.reason


def test_auto_revert_needs_the_head_commit_time() -> None:
    """Without the head commit's committer time the label cannot be verified."""
    snap = snapshot(
        SAFE,
        labels=[LABEL],
        label_events=[labeled("alice")],
        commits=[commit(committed_at=None)],
    )
    assert "head commit time unknown" in outcome(run(snap), "auto_revert_marker").reason


def test_auto_revert_cannot_lower() -> None:
    """A verified auto-revert label on a D change leaves it D."""
    snap = snapshot(
        added(".github/workflows/x.yml"), labels=[LABEL], label_events=[labeled("alice")]
    )
    assert run(snap).quadrant.value == "D"
