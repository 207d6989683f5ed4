"""The daemon's PR records read-only (prs.json plus its journal), for the digest and dashboard."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from capdaemon.filenames import JOURNAL_FILE, PRS_FILE
from capdaemon.jsonl import read_records
from capdaemon.state import StateError, read_json
from capdaemon.stores.prrecord import PRRecord, RecordError, record_of


def pr_records(state_dir: Path, on_bad: Callable[[str], None] | None = None) -> dict[str, PRRecord]:
    """The daemon's PR records, read-only: prs.json plus its journal (newest wins), typed.

    A malformed complete journal line raises a StateError naming file and line (the digest
    never reports a PR's older state as if current), or, with `on_bad`, is told and skipped;
    a torn last line is a crash mid-append (its action had not started) and is not read.
    A record holding a value the daemon would refuse raises a StateError naming the file,
    the PR and the field."""
    path = Path(state_dir) / PRS_FILE
    journal = Path(state_dir) / JOURNAL_FILE
    prs = dict((read_json(path, None) or {}).get("prs") or {})
    source = dict.fromkeys(prs, path)
    n = 0

    def told(where: str) -> None:
        nonlocal n
        n += 1
        if on_bad is not None:
            on_bad(where)

    for entry in read_records(journal, told if on_bad is not None else None):
        n += 1
        if "ref" in entry and "record" in entry:
            prs[entry["ref"]], source[entry["ref"]] = entry["record"], journal
            continue
        where = f"{journal}:{n}: malformed journal line (no ref or record)"
        if on_bad is None:
            raise StateError(where)
        on_bad(where)
    out: dict[str, PRRecord] = {}
    for ref in list(prs):  # each JSON object is dropped once typed (one copy at a time)
        try:
            out[ref] = record_of(ref, prs.pop(ref))
        except RecordError as exc:
            raise StateError(f"{source[ref]}: {exc}") from exc
    return out
