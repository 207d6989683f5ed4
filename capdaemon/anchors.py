"""Audit anchors: a log's newest seq and hash published off the host, and checked back."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from capdaemon.audit import VerifyReport, verify
from capdaemon.canon import entry_hash
from capdaemon.chain import HEX64
from capdaemon.filenames import ACTIONS_LOG, CLASSIFIER_LOG
from capdaemon.jsonl import AuditCorruptError, read_records
from capdaemon.quoting import printable_short
from capdaemon.state import file_lock

# The chain has no key: whoever can write bot-state/ can rebuild it end to end. Anchors are
# the checkpoint (as in transparency logs): the digest publishes each log's newest seq and
# hash off the host (the digest issue, its notification mails), and `audit verify --anchor`
# checks that the log still holds exactly that entry; the chain then vouches for all before it.

ANCHOR_PREFIX = "audit-anchor:"
ANCHOR_LOGS = (CLASSIFIER_LOG, ACTIONS_LOG)
_SEQ = re.compile(r"[1-9][0-9]{0,17}")
# an anchor line, possibly quoted (`> `), listed (`- `) or in inline code, as mail and Markdown do
_ANCHOR_LINE = re.compile(r"^[\s>*`-]*" + re.escape(ANCHOR_PREFIX) + r"(?P<rest>.*)$")


class AnchorError(ValueError):
    """Anchor text that does not read as `FILE seq=N hash=H`."""


@dataclass(frozen=True)
class Anchor:
    """A published chain head: the entry `seq` of log `log` has hash `hash`."""

    log: str
    seq: int
    hash: str
    source: str = field(default="", compare=False)  # where it was read (for messages)

    def __post_init__(self) -> None:
        if self.log not in ANCHOR_LOGS:
            raise AnchorError(f"unknown log {self.log!r} (expected {' or '.join(ANCHOR_LOGS)})")
        if isinstance(self.seq, bool) or not isinstance(self.seq, int) or self.seq < 1:
            raise AnchorError(f"seq must be a positive integer, got {self.seq!r}")
        if not isinstance(self.hash, str) or not HEX64.fullmatch(self.hash):
            raise AnchorError("hash must be 64 lowercase hex digits")

    def line(self) -> str:
        """The fixed machine-readable line: `audit-anchor: FILE seq=N hash=H`."""
        return f"{ANCHOR_PREFIX} {self.log} seq={self.seq} hash={self.hash}"


def parse_anchor(text: str, source: str = "") -> Anchor:
    """`FILE seq=N hash=H` (the `audit-anchor:` prefix optional) → Anchor, else AnchorError."""
    s = str(text).strip()
    if s.startswith(ANCHOR_PREFIX):
        s = s[len(ANCHOR_PREFIX) :]
    parts = s.split()
    if len(parts) != 3:
        raise AnchorError(f"expected 'FILE seq=N hash=H', got {printable_short(text)!r}")
    log, seq_t, hash_t = parts
    if log not in ANCHOR_LOGS:
        raise AnchorError(f"unknown log {log[:60]!r} (expected {' or '.join(ANCHOR_LOGS)})")
    if not seq_t.startswith("seq=") or not _SEQ.fullmatch(seq_t[4:]):
        raise AnchorError(f"expected seq=N (N a positive integer), got {seq_t[:40]!r}")
    hex_t = hash_t[5:].lower() if hash_t.startswith("hash=") else ""
    if not HEX64.fullmatch(hex_t):
        raise AnchorError(f"expected hash=<64 hex digits>, got {hash_t[:80]!r}")
    return Anchor(log, int(seq_t[4:]), hex_t, source)


def find_anchors(text: str, source: str = "") -> list[Anchor]:
    """Every anchor line in free text (a digest, an issue body, a mail), deduplicated, in order.

    A line that starts with `audit-anchor:` (after quote/list/code marks) must be well
    formed: AnchorError names its line. Mentions later in a line are prose, not anchors.
    """
    out: list[Anchor] = []
    for n, line in enumerate(str(text).splitlines(), 1):
        m = _ANCHOR_LINE.match(line)
        if not m:
            continue
        try:
            anchor = parse_anchor(m.group("rest").strip().rstrip("`"), source)
        except AnchorError as exc:
            raise AnchorError(f"line {n}: {exc}") from None
        if anchor not in out:
            out.append(anchor)
    return out


def head_anchor(path: Path) -> tuple[Anchor | None, VerifyReport]:
    """The anchor of a log's newest entry, after a full chain check under the writer's lock.

    (None, report) when the chain does not verify (never anchor a broken chain) or the log
    is empty; the log's name must be one of ANCHOR_LOGS.
    """
    path = Path(path)
    if not path.parent.is_dir():
        return None, VerifyReport(path, True, 0, reason="no log yet")
    with file_lock(path.with_name(path.name + ".lock")):
        report = verify(path)
    if not report.ok or report.count == 0:
        return None, report
    return Anchor(path.name, report.count, report.last_hash), report


def check_anchors(path: Path, anchors: Iterable[Anchor]) -> list[str]:
    """One-line reasons, one per anchor of this log the file does not hold; [] when all hold.

    An anchor holds when every entry with its seq carries its hash, that hash matches the
    entry's content, and such an entry exists. (The chain check proves the rest.)
    """
    path = Path(path)
    mine = [a for a in anchors if a.log == path.name]
    if not mine:
        return []
    seen, last, unreadable = _hashes_at(path, {a.seq for a in mine})
    out = []
    for a in mine:
        hashes = seen.get(a.seq)
        if hashes == {a.hash}:
            continue
        if hashes is None:
            detail = unreadable or f"the log ends at seq {last}"
        else:
            other = sorted(hashes - {a.hash}) or ["?"]
            detail = f"entry seq={a.seq} has hash {other[0][:16]}…, the anchor {a.hash[:16]}…"
        out.append(
            f"{path}: anchor seq={a.seq} from {a.source or 'the digest'} does not match: "
            f"the log was rewritten or cut ({detail})"
        )
    return out


def _hashes_at(path: Path, wanted: set[int]) -> tuple[dict[int, set[str]], int, str]:
    """(seq → the hashes its entries record and have, for each wanted seq found; the last seq
    in the log; why the log could not be read to its end, or "")."""
    seen: dict[int, set[str]] = {}
    last = 0
    try:
        for rec in read_records(path):
            seq = rec.get("seq") if isinstance(rec, dict) else None
            if not isinstance(seq, int) or isinstance(seq, bool):
                continue
            last = max(last, seq)
            if seq in wanted:
                recorded, actual = rec.get("hash"), entry_hash(rec)
                seen.setdefault(seq, set()).update({str(recorded), actual})
    except AuditCorruptError as exc:
        return seen, last, str(exc)
    return seen, last, ""
