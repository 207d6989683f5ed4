"""Non-ASCII file names through real git and the sandbox: NFD on disk, Korean, look-alikes."""

from __future__ import annotations

import unicodedata

from .conftest import Harness


def test_korean_and_nfd_doc_names_merge_as_a_through_real_git(daemon: Harness) -> None:
    """A docs change named in Korean, and one written NFD (as macOS does), is A and merges
    (one file per PR: several files are tier 2, a one-tap)."""
    nfd = unicodedata.normalize("NFD", "docs/guide/café.md")
    assert nfd != unicodedata.normalize("NFC", nfd)
    prs = [daemon.open_pr({"docs/guide/설치.md": "# 설치\n"}), daemon.open_pr({nfd: "# café\n"})]
    daemon.tick()
    daemon.tick()
    for n in prs:
        rec = daemon.classifications(n)[-1]
        assert rec["quadrant"] == "A", rec
        assert daemon.pull(n).merged
    assert not daemon.issues("review")  # no passive issue for an A change


def test_look_alike_examples_folder_is_not_a_carve_out_through_real_git(daemon: Harness) -> None:
    """`ｅxamples/` (fullwidth e) is not `examples/`: critical, with the look-alike named."""
    n = daemon.open_pr({"ｅxamples/run.py": "print(1)\n"})
    daemon.tick()
    rec = daemon.classifications(n)[-1]
    assert rec["quadrant"] != "A"
    assert "looks like examples/" in rec["reasoning"], rec["reasoning"]
