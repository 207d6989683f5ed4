"""Carve-out attacks end to end: typo flips and comment tricks through the sandbox and a live
daemon. Each one ends as a critical verdict (D where the path is irreversible) with a ballot or
a passive review; real comment edits and real typo fixes still pass as A and merge."""

from __future__ import annotations

import pytest

from tests.daemon.conftest import Harness

from .conftest import quadrant

pytestmark = pytest.mark.slow

BASE = {
    "app/loader.py": "x = 1\n# note\nprint(x)\n",
    "app/clean.py": "x = 1\n# note\nprint(x)\n",
    "app/strings.py": 's = """\nintro\n# not a comment\n"""\nprint(s)\n',
    "app/native.c": "int f(void) {\n  int a = 1;\n  // keep\n  a = a + 1;\n  return a;\n}\n",
    "app/T.java": "class T { static int f() { int a = 1;\n  // note\n  return a; } }\n",
    "web/app.js": "let a = 1;\na += 1;\nconsole.log(a);\n",
    "web/index.html": "<!doctype html><title>t</title><p>a</p>\n<!-- note -->\n",
    "db/migrations/0001_init.py": "x = 1\n# note\nprint(x)\n",
    "docs/concepts/r1.md": "# Rules\n\nDeleting a branch is irreversible.\n",
    "docs/concepts/r2.md": "# Rules\n\nAccess is unauthorized.\n",
    "docs/concepts/r3.md": "# Rules\n\nBackups are encrypted.\n",
    "docs/concepts/r4.md": "# Rules\n\nThe classifer decides.\n",
    "app/notes.md": "# Notes\n\nSome prose.\n",  # prose outside docs/ (carved out there)
}


# name → (files, expected quadrant)
ATTACKS: dict[str, tuple[dict[str, str], str]] = {
    "py-coding-cookie": (
        {"app/loader.py": "# vim: set fileencoding=utf-7 :\nx = 1\n# note +AAo-x = 2\nprint(x)\n"},
        "B",
    ),
    "py-hash-inside-string": (
        {"app/strings.py": 's = """\nintro\n# changed\n"""\nprint(s)\n'},
        "B",
    ),
    "c-continuation": (
        {"app/native.c": BASE["app/native.c"].replace("// keep", "// keep \\")},
        "B",
    ),
    "java-unicode-escape": (
        {"app/T.java": BASE["app/T.java"].replace("// note", "// note \\u000a a = 2;")},
        "B",
    ),
    "js-block-around-call": (
        {"web/app.js": "let a = 1;\n/*\na += 1;\n*/\nconsole.log(a);\n"},
        "B",
    ),
    "html-bang-closer": (
        {
            "web/index.html": BASE["web/index.html"].replace(
                "<!-- note -->", "<!-- note --!><script>document.title='x'</script> -->"
            )
        },
        "B",
    ),
    "prose-line-in-a-doc": ({"app/notes.md": "# Notes\n\nOther prose.\n"}, "B"),
    "migration-coding-cookie": (
        {
            "db/migrations/0001_init.py": (
                "# vim: set fileencoding=utf-7 :\nx = 1\n# note +AAo-x = 2\nprint(x)\n"
            )
        },
        "D",
    ),
    "typo-flip-irreversible": (
        {"docs/concepts/r1.md": "# Rules\n\nDeleting a branch is reversible.\n"},
        "B",
    ),
    "typo-flip-unauthorized": (
        {"docs/concepts/r2.md": "# Rules\n\nAccess is authorized.\n"},
        "B",
    ),
    "typo-flip-encrypted": (
        {"docs/concepts/r3.md": "# Rules\n\nBackups are decrypted.\n"},
        "B",
    ),
}
GOOD: dict[str, dict[str, str]] = {
    "real-comment-edit": {"app/clean.py": "x = 1\n# a better note\n\n# and one more\nprint(x)\n"},
    "real-typo-fix": {"docs/concepts/r4.md": "# Rules\n\nThe classifier decides.\n"},
}


def test_carve_out_attacks_end_critical_and_real_edits_still_pass(daemon: Harness) -> None:
    """Every attack is critical (D where irreversible) with a ballot or a passive review;
    the real comment edit and the real typo fix are A and merge."""
    sb = daemon.sb
    sb.commit_files(sb.repo, "main", BASE, "base files", author=sb.owner)
    numbers = {name: daemon.open_pr(files, title=name) for name, (files, _) in ATTACKS.items()}
    good = {name: daemon.open_pr(files, title=name) for name, files in GOOD.items()}
    daemon.tick()
    daemon.tick()
    got = {name: quadrant(daemon, n) for name, n in numbers.items()}
    assert got == {name: q for name, (_, q) in ATTACKS.items()}
    for name, n in numbers.items():
        reasons = " ".join(r for f in daemon.classifications(n)[-1]["files"] for r in f["reasons"])
        # each refusal says why, and what would have passed
        assert ("what passes:" in reasons) or ("not a typo fix" in reasons), (name, reasons)
        if got[name] == "D":
            assert daemon.issue_for(n, "ballot").state == "open", name
            assert not daemon.pull(n).merged, name
        else:
            assert daemon.issue_for(n, "review").state == "open", name
    assert {name: quadrant(daemon, n) for name, n in good.items()} == dict.fromkeys(GOOD, "A")
    for name, n in good.items():
        assert daemon.pull(n).merged, name


VALIDATOR = "src/multiagent_protocol/pr_validator.py"
VALIDATOR_TEXT = '''"""Merge rules."""


def can_merge(pr):
    if not pr.ok:
        return False
    return all(c.passed for c in pr.checks)


def describe(pr):
    body = pr.body
    owner = pr.owner
    title = pr.title
    return f"{title}: {body} by {owner}"
'''


def test_a_rename_in_the_function_after_can_merge_is_b_not_d(daemon: Harness) -> None:
    """git's hunk header names can_merge (the hunk opens the next function); the head file
    itself says line 13 is in describe: critical and reversible (B), not merge logic (D)."""
    sb = daemon.sb
    sb.commit_files(sb.repo, "main", {VALIDATOR: VALIDATOR_TEXT}, "validator", author=sb.owner)
    rename = daemon.open_pr({VALIDATOR: VALIDATOR_TEXT.replace("title", "heading")})
    inside = daemon.open_pr({VALIDATOR: VALIDATOR_TEXT.replace("pr.ok", "pr.ready")})
    daemon.tick()
    assert quadrant(daemon, rename) == "B"
    assert quadrant(daemon, inside) == "D"
    reasons = " ".join(r for f in daemon.classifications(inside)[-1]["files"] for r in f["reasons"])
    assert "inside 'can_merge'" in reasons
