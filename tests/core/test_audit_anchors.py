"""Audit anchors: chain heads published off the host catch a log rebuilt or cut on the host."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from capdaemon.anchors import (
    ANCHOR_PREFIX,
    Anchor,
    AnchorError,
    find_anchors,
    head_anchor,
    parse_anchor,
)
from capdaemon.audit import (
    GENESIS,
    AuditLog,
    entry_hash,
    log_paths,
    verify,
)
from capdaemon.canon import canonical_json
from capdaemon.cli import main

T0 = datetime(2026, 5, 25, 12, 0, tzinfo=UTC)
H = "ab" * 32
H2 = "0123456789abcdef" * 4


@pytest.fixture(autouse=True)
def _no_env_dirs(monkeypatch):
    """Keep the caller's CAPDAEMON_* environment out of these tests."""
    monkeypatch.delenv("CAPDAEMON_STATE", raising=False)


# ----------------------------------------------------------------------------- parsing

PARSE_OK = [
    ("bare", f"classifier_audit.jsonl seq=123 hash={H}", ("classifier_audit.jsonl", 123, H)),
    ("prefixed", f"audit-anchor: actions.jsonl seq=1 hash={H}", ("actions.jsonl", 1, H)),
    ("upper-hex", f"actions.jsonl seq=7 hash={H2.upper()}", ("actions.jsonl", 7, H2)),
    ("spaces", f"  audit-anchor:   actions.jsonl   seq=9  hash={H}  ", ("actions.jsonl", 9, H)),
]
PARSE_BAD = [
    ("empty", "", "expected 'FILE seq=N hash=H'"),
    ("missing-hash", "actions.jsonl seq=1", "expected 'FILE seq=N hash=H'"),
    ("extra-token", f"actions.jsonl seq=1 hash={H} more", "expected 'FILE seq=N hash=H'"),
    ("unknown-log", f"prs.json seq=1 hash={H}", "unknown log"),
    ("path-not-name", f"../x/actions.jsonl seq=1 hash={H}", "unknown log"),
    ("seq-zero", f"actions.jsonl seq=0 hash={H}", "expected seq=N"),
    ("seq-negative", f"actions.jsonl seq=-3 hash={H}", "expected seq=N"),
    ("seq-leading-zero", f"actions.jsonl seq=012 hash={H}", "expected seq=N"),
    ("seq-word", f"actions.jsonl seq=ten hash={H}", "expected seq=N"),
    ("order-swapped", f"actions.jsonl hash={H} seq=1", "expected seq=N"),
    ("hash-short", f"actions.jsonl seq=1 hash={H[:63]}", "expected hash="),
    ("hash-not-hex", f"actions.jsonl seq=1 hash={'g' * 64}", "expected hash="),
    ("hash-key", f"actions.jsonl seq=1 sha={H}", "expected hash="),
]


@pytest.mark.parametrize(("text", "want"), [c[1:] for c in PARSE_OK], ids=[c[0] for c in PARSE_OK])
def test_parse_anchor_ok(text: str, want: tuple[str, int, str]) -> None:
    """Well-formed anchors, with or without the prefix, parse; hex is normalised to lower case."""
    a = parse_anchor(text)
    assert (a.log, a.seq, a.hash) == want
    assert parse_anchor(a.line()) == a  # the rendered line round-trips


@pytest.mark.parametrize(("text", "msg"), [c[1:] for c in PARSE_BAD], ids=[c[0] for c in PARSE_BAD])
def test_parse_anchor_bad(text: str, msg: str) -> None:
    """Anything else is an AnchorError saying what was expected."""
    with pytest.raises(AnchorError, match=msg.replace("(", r"\(")):
        parse_anchor(text)


def test_anchor_validates_itself() -> None:
    """An Anchor cannot be built with values that would not render as a valid line."""
    for log, seq, h in [("x.jsonl", 1, H), ("actions.jsonl", 0, H), ("actions.jsonl", 1, "```")]:
        with pytest.raises(AnchorError):
            Anchor(log, seq, h)
    assert Anchor("actions.jsonl", 3, H).line() == f"{ANCHOR_PREFIX} actions.jsonl seq=3 hash={H}"


def test_find_anchors_in_free_text() -> None:
    """Anchor lines are found in a digest body, a quoted mail, a list or inline code;
    duplicates collapse; prose that merely mentions the prefix is not an anchor."""
    text = "\n".join(
        [
            "# capdaemon digest",
            "Lines starting with audit-anchor: pin the logs.",
            "```text",
            f"audit-anchor: classifier_audit.jsonl seq=4 hash={H}",
            f"audit-anchor: actions.jsonl seq=9 hash={H2}",
            "```",
            f"> audit-anchor: actions.jsonl seq=2 hash={H}\r",
            f"- `audit-anchor: actions.jsonl seq=9 hash={H2}`",
        ]
    )
    found = find_anchors(text, source="mail.txt")
    assert [(a.log, a.seq) for a in found] == [
        ("classifier_audit.jsonl", 4),
        ("actions.jsonl", 9),
        ("actions.jsonl", 2),
    ]
    assert {a.source for a in found} == {"mail.txt"}
    assert find_anchors("no anchors here") == []


def test_find_anchors_rejects_a_malformed_anchor_line() -> None:
    """A line that claims to be an anchor but is malformed is an error naming its line."""
    with pytest.raises(AnchorError, match=r"^line 2: expected hash="):
        find_anchors(f"ok\naudit-anchor: actions.jsonl seq=1 hash={H[:10]}\n")


# ----------------------------------------------------------------------------- helpers


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """A state dir with 3 classifications and 5 actions."""
    sdir = tmp_path / "bot-state"
    sdir.mkdir()
    clog, alog = (AuditLog(p) for p in log_paths(sdir))
    for i in range(3):
        clog.append({"pr": f"acme/w#{i}", "quadrant": "D", "head_sha": f"{i:040x}"}, now=T0)
    for i in range(5):
        alog.append({"action": "merge", "pr": f"acme/w#{i}"}, now=T0 + timedelta(minutes=i))
    return sdir


def anchors_of(sdir: Path) -> list[str]:
    """The anchor lines of both logs as they are now (what a digest would publish)."""
    out = []
    for path in log_paths(sdir):
        anchor, report = head_anchor(path)
        assert anchor is not None, report
        out.append(anchor.line())
    return out


def rewrite_chain(path: Path, edit=None, keep: int | None = None) -> None:
    """The attacker with write access to bot-state/: edit entries and/or keep only the first
    `keep`, then recompute every seq, prev and hash and the .head pointer, so that the plain
    chain check passes."""
    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    if keep is not None:
        recs = recs[:keep]
    prev, lines = GENESIS, []
    for seq, rec in enumerate(recs, 1):
        body = {k: v for k, v in rec.items() if k not in ("seq", "prev", "hash")}
        if edit is not None:
            body = edit(body)
        body["seq"], body["prev"] = seq, prev
        body["hash"] = prev = entry_hash(body)
        lines.append(canonical_json(body) + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    head = path.with_name(path.name + ".head")
    head.write_text(json.dumps({"seq": len(recs), "hash": prev}), encoding="utf-8")


def _relabel(body: dict) -> dict:
    return {**body, "quadrant": "A"} if body.get("pr") == "acme/w#1" else body


def verify_args(sdir: Path, *anchors: str) -> list[str]:
    """`audit verify --state DIR --anchor A ...`."""
    out = ["audit", "verify", "--state", str(sdir)]
    for a in anchors:
        out += ["--anchor", a]
    return out


# ----------------------------------------------------------------------------- verify


def test_anchors_hold_on_the_untouched_log(capsys, state) -> None:
    """Anchors taken from the logs verify (exit 0), also after the logs grew."""
    anchors = anchors_of(state)
    AuditLog(log_paths(state)[1]).append({"action": "close", "pr": "acme/w#9"}, now=T0)
    assert main(verify_args(state, *anchors)) == 0
    out = capsys.readouterr().out
    assert "classifier_audit.jsonl: 1 anchor(s) hold, up to seq 3" in out
    assert "actions.jsonl: 1 anchor(s) hold, up to seq 5" in out


def test_consistent_rewrite_passes_the_chain_but_fails_the_anchor(capsys, state) -> None:
    """Rebuilding the whole chain (every hash and the .head) fools the plain check, not the
    anchor published before the rewrite."""
    anchors = anchors_of(state)
    clog = log_paths(state)[0]
    rewrite_chain(clog, edit=_relabel)
    assert verify(clog).ok  # the chain alone cannot tell
    assert main(verify_args(state)) == 0
    capsys.readouterr()
    assert main(verify_args(state, *anchors)) == 1
    out = capsys.readouterr().out
    assert (
        f"{clog}: anchor seq=3 from --anchor does not match: the log was rewritten or cut "
        "(entry seq=3 has hash" in out
    )
    assert "actions.jsonl: 1 anchor(s) hold" in out  # the other log is untouched


def test_cut_tail_below_the_anchor_fails(capsys, state) -> None:
    """Cutting the log below the anchored seq (and fixing .head) fails the anchor."""
    anchors = anchors_of(state)
    alog = log_paths(state)[1]
    rewrite_chain(alog, keep=3)
    assert verify(alog).ok
    assert main(verify_args(state, *anchors)) == 1
    out = capsys.readouterr().out
    assert "anchor seq=5 from --anchor does not match: the log was rewritten or cut" in out
    assert "(the log ends at seq 3)" in out


def test_a_missing_log_fails_its_anchor(capsys, state) -> None:
    """Deleting a log (and its .head) entirely fails its anchor."""
    anchors = anchors_of(state)
    for p in log_paths(state)[1:]:
        p.unlink()
        p.with_name(p.name + ".head").unlink()
    assert main(verify_args(state, *anchors)) == 1
    assert "(the log ends at seq 0)" in capsys.readouterr().out


def test_edit_keeping_the_old_hash_field_fails_the_anchor(capsys, state) -> None:
    """An anchored entry whose content changed but whose hash field was kept does not hold."""
    anchors = anchors_of(state)
    clog = log_paths(state)[0]
    lines = clog.read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace('"quadrant":"D"', '"quadrant":"A"')
    clog.write_text("".join(lines))
    assert main(verify_args(state, *anchors)) == 1
    out = capsys.readouterr().out
    assert "hash does not match the content" in out
    assert "anchor seq=3 from --anchor does not match" in out


def test_anchors_from_a_saved_digest_and_stdin(capsys, state, tmp_path, monkeypatch) -> None:
    """--anchors-from reads anchor lines from any saved text; `-` reads stdin."""
    body = "Saved issue body\n\n```text\n" + "\n".join(anchors_of(state)) + "\n```\n"
    saved = tmp_path / "issue.md"
    saved.write_text(body)
    args = ["audit", "verify", "--state", str(state), "--anchors-from", str(saved)]
    assert main(args) == 0
    rewrite_chain(log_paths(state)[0], edit=_relabel)
    capsys.readouterr()
    assert main(args) == 1
    assert f"anchor seq=3 from {saved} does not match" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO(body))
    assert main(["audit", "verify", "--state", str(state), "--anchors-from", "-"]) == 1


def test_anchors_from_digests(capsys, state) -> None:
    """--anchors-from-digests checks the anchors of every digest in STATE/digests/."""
    (state / "digests").mkdir()
    (state / "digests" / "2026-05-24.md").write_text("an old digest without anchors\n")
    (state / "digests" / "2026-05-25.md").write_text("\n".join(anchors_of(state)) + "\n")
    args = ["audit", "verify", "--state", str(state), "--anchors-from-digests"]
    assert main(args) == 0
    rewrite_chain(log_paths(state)[1], keep=4)
    assert main(args) == 1
    assert "2026-05-25.md does not match" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "msg"),
    [
        (["--anchor", f"actions.jsonl seq=x hash={H}"], "--anchor 'actions.jsonl seq=x"),
        (["--anchor", "actions.jsonl"], "--anchor 'actions.jsonl': expected 'FILE seq=N hash=H'"),
        (["--anchor", f"prs.json seq=1 hash={H}"], "unknown log 'prs.json'"),
        (["--anchors-from", "BAD"], "--anchors-from BAD: line 2: expected hash="),
        (["--anchors-from", "EMPTY"], "--anchors-from EMPTY: no `audit-anchor:` lines"),
        (["--anchors-from", "MISSING"], "--anchors-from MISSING: cannot read"),
        (["--anchors-from-digests"], "--anchors-from-digests: no anchors in"),
    ],
    ids=["bad-seq", "too-short", "unknown-log", "bad-line", "no-anchors", "missing", "no-digest"],
)
def test_malformed_anchor_input_is_exit_2(capsys, state, tmp_path, extra, msg) -> None:
    """Malformed anchor text is a usage error (exit 2) naming the argument, before any check."""
    files = {"BAD": "x\naudit-anchor: actions.jsonl seq=1 hash=abc\n", "EMPTY": "nothing\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    extra = [str(tmp_path / e) if e in (*files, "MISSING") else e for e in extra]
    msg = msg.replace("BAD", str(tmp_path / "BAD")).replace("EMPTY", str(tmp_path / "EMPTY"))
    msg = msg.replace("MISSING", str(tmp_path / "MISSING"))
    assert main(["audit", "verify", "--state", str(state), *extra]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("capdaemon audit: error: ")
    assert msg in captured.err
    assert len(captured.err.strip().splitlines()) == 1


def test_head_anchor_skips_empty_and_broken_logs(tmp_path, state) -> None:
    """No anchor for a log without entries, nor for one whose chain is broken."""
    anchor, report = head_anchor(tmp_path / "actions.jsonl")
    assert anchor is None and report.ok and report.count == 0
    clog = log_paths(state)[0]
    clog.write_text(clog.read_text().replace('"quadrant":"D"', '"quadrant":"A"', 1))
    anchor, report = head_anchor(clog)
    assert anchor is None and not report.ok
