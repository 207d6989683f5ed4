"""Benchmark adversarial inputs against benign ones of the same size (prints a table).

Cases: the typo carve-out's quadratic pair (`x a…a y` → `y a…a x`) at N = 4,000 and 65,536
in a docs/concepts/ file, classified by the full engine; the marker bombs (deep JSON, many
unclosed openers) read by the issue reader; the trailer bombs (21,800 one-character
continuation lines; 21,000 comment lines then 23,000 blank lines) in a commit message
classified by the full engine (a message over MAX_MESSAGE_CHARS characters or over
MAX_MESSAGE_LINES lines is refused unread, so both bombs now stop at the line count). Each row
gives the median time of the adversarial input, of a benign input of the same size, their
ratio (goal: at most 2×) and the peak memory of the adversarial run.
"""

from __future__ import annotations

import difflib
import gc
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from capdaemon.classify import classify
from capdaemon.classify.trailers import MAX_MESSAGE_CHARS, commit_agent_session
from capdaemon.config import Config
from capdaemon.forge.markers import parse_marker, render_marker
from capdaemon.model import Commit, FileChange, FileStatus, PRSnapshot

NOW = datetime(2026, 5, 25, 12, 0, tzinfo=UTC)
RUNS = 5
Case = tuple[int, Callable[[], object], Callable[[], object]]
SESSION = "Agent-Session: claude-code/claude-opus-4/sess-00000001"


def _patch(old: list[str], new: list[str]) -> str:
    return "\n".join(list(difflib.unified_diff(old, new, lineterm="", n=3))[2:])


def _snapshot(files: tuple[FileChange, ...], message: str = f"Fix\n\n{SESSION}\n") -> PRSnapshot:
    commit = Commit(sha="h" * 40, parents=("p" * 40,), message=message, committed_at=NOW)
    return PRSnapshot(
        repo="acme/widgets",
        number=1,
        base_ref="main",
        base_sha="b" * 40,
        head_sha="h" * 40,
        author="coder-bot",
        files=files,
        commits=(commit,),
    )


def _doc_change(old_line: str, new_line: str) -> tuple[FileChange, ...]:
    old = ["# Rules", "", old_line, "", "The end."]
    new = ["# Rules", "", new_line, "", "The end."]
    return (
        FileChange(
            path="docs/concepts/rules.md",
            status=FileStatus.MODIFIED,
            patch=_patch(old, new),
            additions=1,
            deletions=1,
            base_content="\n".join(old) + "\n",  # a Markdown typo fix is judged whole
            head_content="\n".join(new) + "\n",
        ),
    )


def typo_case(n: int) -> Case:
    """The quadratic pair versus a real one-letter typo fix on a line of the same length."""
    config = Config(owners=("alice",))
    bad = _snapshot(_doc_change("intro x" + "a" * n + "y", "intro y" + "a" * n + "x"))
    words = ("rule " * (n // 5 + 1))[: n - 8]
    good = _snapshot(_doc_change(f"{words} classifer", f"{words} classifier"))
    return (
        len(bad.files[0].patch or ""),
        lambda: classify(bad, config, now=NOW),
        lambda: classify(good, config, now=NOW),
    )


def marker_deep_case() -> Case:
    """`{"a":` + `[`×100,000 in a marker versus a body of plain text and one real marker."""
    bomb = '<!-- capdaemon: {"kind": "x", "a": ' + "[" * 100_000 + "]" * 100_000 + "} -->"
    real = render_marker({"kind": "ballot", "pr": "acme/widgets#1"})
    good = "word " * ((len(bomb) - len(real)) // 5) + real
    return (len(bomb), lambda: parse_marker(bomb), lambda: parse_marker(good))


def marker_openers_case() -> Case:
    """65,520 characters of unclosed `<!-- capdaemon: {` versus prose with one real marker."""
    unit = "<!-- capdaemon: {}"
    bomb = unit * (65_520 // len(unit))
    real = render_marker({"kind": "ballot", "pr": "acme/widgets#1"})
    good = "word " * ((len(bomb) - len(real)) // 5) + real
    return (len(bomb), lambda: parse_marker(bomb), lambda: parse_marker(good))


def trailer_case(kind: str) -> Case:
    """A commit message bomb versus prose paragraphs and one trailer, of the same size."""
    config = Config(owners=("alice",))
    files = (FileChange(path="examples/a.py", status=FileStatus.ADDED, patch="@@ -0,0 +1 @@\n+x"),)
    if kind == "continuations":
        bomb = f"Fix\n\n{SESSION}\n" + " x\n" * 21_800
    else:
        bomb = f"Fix\n\n{SESSION}\n" + "#\n" * 21_000 + "\n" * 23_000
    prose = ("Some prose explaining the change.\n" * 20 + "\n") * (len(bomb) // 700 + 1)
    good = f"Fix\n\n{prose[: len(bomb) - len(SESSION) - 7]}\n\n{SESSION}\n"
    bad_s, good_s = _snapshot(files, bomb), _snapshot(files, good)

    def run(snap: PRSnapshot) -> object:
        commit_agent_session.cache_clear()  # measure the reading, not the cache
        return classify(snap, config, now=NOW)

    assert len(bomb) <= MAX_MESSAGE_CHARS, "the bomb must pass the size cap"
    return (len(bomb), lambda: run(bad_s), lambda: run(good_s))


def _median(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(RUNS):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _peak(fn: Callable[[], object]) -> int:
    gc.collect()
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def main() -> None:
    """Print the table."""
    cases = [
        ("typo pair, N=4,000", *typo_case(4_000)),
        ("typo pair, N=65,536", *typo_case(65_536)),
        ("marker, deep JSON", *marker_deep_case()),
        ("marker, unclosed openers", *marker_openers_case()),
        ("trailers, continuations", *trailer_case("continuations")),
        ("trailers, comment lines", *trailer_case("comments")),
    ]
    head = f"{'input':<26} {'size (chars)':>13} {'adversarial':>12} {'benign':>10} {'ratio':>7}"
    print(f"{head} {'peak MiB':>9}")
    for name, size, bad, good in cases:
        bad()
        good()  # warm caches (compiled classifier, regexes)
        t_bad, t_good = _median(bad), _median(good)
        peak = _peak(bad) / (1 << 20)
        print(
            f"{name:<26} {size:>13,} {t_bad * 1000:>10.1f}ms {t_good * 1000:>8.1f}ms "
            f"{t_bad / t_good:>6.2f}x {peak:>9.1f}"
        )


if __name__ == "__main__":
    main()
