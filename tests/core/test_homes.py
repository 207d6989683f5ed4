"""One home per fact: the timestamp parser, the JSONL reader, the file-name constants."""

from __future__ import annotations

import ast
import subprocess
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon import filenames
from capdaemon.jsonl import AuditCorruptError, read_after, read_indexed, read_records
from capdaemon.timefmt import TimestampError, parse_utc, utc_iso

PKG = Path(__file__).resolve().parents[2] / "capdaemon"

aware = st.datetimes(
    min_value=datetime(1971, 1, 1),
    max_value=datetime(2200, 1, 1),
    timezones=st.sampled_from(
        [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=7))]
    ),
)


@settings(max_examples=200, deadline=None)
@given(aware)
def test_parse_utc_reads_back_what_utc_iso_wrote(dt: datetime) -> None:
    """Every aware time survives the round trip to `...Z` text and back, to the microsecond."""
    assert parse_utc(utc_iso(dt)) == dt


@settings(max_examples=15, deadline=None)
@given(aware)
def test_parse_utc_agrees_with_gnu_date(dt: datetime) -> None:
    """GNU date reads the same instant from the text (seconds since the epoch)."""
    text = utc_iso(dt.replace(microsecond=0))
    out = subprocess.run(
        ["date", "-u", "-d", text, "+%s"], capture_output=True, text=True, check=True
    ).stdout
    assert int(parse_utc(text).timestamp()) == int(out)


@pytest.mark.parametrize("text", ["2026-05-25T12:00:00", "2026-05-25", "2026-05-25 12:00"])
def test_a_naive_time_is_refused_naming_the_field(text: str) -> None:
    """A time without a zone is never guessed to be UTC: the error names the field."""
    with pytest.raises(TimestampError, match=r"^opened_at: .* has no time zone"):
        parse_utc(text, "opened_at")


@pytest.mark.parametrize("text", ["", "yesterday", "2026-13-01T00:00:00Z", "12:00Z"])
def test_text_that_is_no_time_is_refused_naming_the_field(text: str) -> None:
    """Garbage is a one-line error naming the field, and a ValueError for old callers."""
    with pytest.raises(ValueError, match=r"^expires_at: .* is not an ISO 8601 time"):
        parse_utc(text, "expires_at")


def test_parse_utc_refuses_a_non_string() -> None:
    """A number where a time belongs (a hand-edited state file) is refused, not coerced."""
    with pytest.raises(TimestampError, match=r"^at: expected an ISO 8601 time, got int"):
        parse_utc(1700000000, "at")  # type: ignore[arg-type]


def test_jsonl_a_torn_last_line_is_an_interrupted_write(tmp_path: Path) -> None:
    """A last line without its newline is not read (a writer crashed or is writing now)."""
    log = tmp_path / filenames.ACTIONS_LOG
    log.write_bytes(b'{"seq": 1}\n{"seq": 2}\n{"seq": 3, "act')
    assert [r["seq"] for r in read_records(log)] == [1, 2]
    assert [off for off, _ in read_indexed(log)] == [0, 11]


@pytest.mark.parametrize("bad", [b"{not json", b"[1, 2]", b'"text"', b"\xff\xfe"])
def test_jsonl_a_malformed_complete_line_is_corruption_naming_file_and_line(
    tmp_path: Path, bad: bytes
) -> None:
    """A complete line that is not a JSON object is refused with FILE:LINE, never skipped."""
    log = tmp_path / filenames.ACTIONS_LOG
    log.write_bytes(b'{"seq": 1}\n' + bad + b'\n{"seq": 3}\n')
    with pytest.raises(AuditCorruptError, match=rf"^{log}:2: not"):
        list(read_records(log))
    told: list[str] = []
    assert [r["seq"] for r in read_records(log, told.append)] == [1, 3]
    assert told and told[0].startswith(f"{log}:2: ")


def test_jsonl_a_missing_log_has_no_records(tmp_path: Path) -> None:
    """No log yet is an empty history, not an error."""
    assert list(read_records(tmp_path / filenames.ACTIONS_LOG)) == []


def test_file_names_are_spelled_only_in_filenames() -> None:
    """No product module spells a config or bot-state file name itself (one home per name)."""
    names = {
        v for k, v in vars(filenames).items() if k.isupper() and isinstance(v, str) and "." in v
    }
    found = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel == "filenames.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names:
                found.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert found == []


def test_iso_times_are_parsed_only_in_timefmt() -> None:
    """No product module parses an ISO time itself (`datetime.fromisoformat`, `strptime`):
    every timestamp goes through `timefmt.parse_utc` (dates, `date.fromisoformat`, may not)."""
    found = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel == "timefmt.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("fromisoformat", "strptime")
                and not (isinstance(node.value, ast.Name) and node.value.id == "date")
            ):
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


@pytest.mark.parametrize(
    ("argv", "prog"),
    [
        (["scope-guard", "--task", "t-1"], "scope-guard"),
        (["dispatch", "/nonexistent/task.yml"], "dispatch"),
        (["tasks", "--state", "/nonexistent/state"], "tasks"),
        (["escalations", "--state", "/nonexistent/state"], "escalations"),
        (["why", "acme/widgets#1", "--state", "/nonexistent/state"], "why"),
        (["audit", "verify", "--state", "/nonexistent/state"], "audit"),
    ],
)
def test_every_command_reports_errors_in_one_format(
    capsys: pytest.CaptureFixture[str], argv: list[str], prog: str
) -> None:
    """Bad input is one stderr line `capdaemon CMD: error: MESSAGE`, whichever command."""
    from capdaemon.cli import main

    code = main(argv)
    err = capsys.readouterr().err
    assert code != 0
    assert err.startswith(f"capdaemon {prog}: error: "), err
    assert len(err.strip().splitlines()) == 1, err


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)
records = st.lists(st.dictionaries(st.text(max_size=6), json_values, max_size=4), max_size=8)


@settings(max_examples=150, deadline=None)
@given(records, st.binary(max_size=12).filter(lambda b: b"\n" not in b), st.data())
def test_jsonl_reader_reads_every_complete_line_and_resumes_at_a_cursor(
    tmp_path_factory: pytest.TempPathFactory,
    recs: list[dict[str, object]],
    torn: bytes,
    data: st.DataObject,
) -> None:
    """Whatever the records and whatever torn bytes follow them, the reader returns exactly
    the complete records (json.dumps is the oracle), and reading from a saved cursor then
    resuming gives the same records as reading at once."""
    import json

    log = tmp_path_factory.mktemp("log") / filenames.ACTIONS_LOG
    lines = [(json.dumps(r, ensure_ascii=False) + "\n").encode("utf-8") for r in recs]
    log.write_bytes(b"".join(lines) + torn)
    assert list(read_records(log)) == recs
    cut = data.draw(st.integers(0, len(lines)))
    first, cursor = read_after(log, 0)
    assert first == recs and cursor == sum(map(len, lines))
    head, mid = read_after(log, sum(map(len, lines[:cut])))
    assert head == recs[cut:] and mid == cursor


def test_jsonl_cursor_read_names_the_absolute_line(tmp_path: Path) -> None:
    """A malformed line found from a cursor is named by its line in the file, not the chunk."""
    log = tmp_path / filenames.ACTIONS_LOG
    log.write_bytes(b'{"seq": 1}\n{"seq": 2}\n{oops\n')
    with pytest.raises(AuditCorruptError, match=rf"^{log}:3: not JSON"):
        read_after(log, 11)
    assert read_after(tmp_path / "missing.jsonl", 5) == ([], 0)
    told: list[str] = []
    assert read_after(log, 10_000, told.append) == ([{"seq": 1}, {"seq": 2}], 28)
    assert told == [f"{log}:3: not JSON: Expecting property name enclosed in double quotes"]
