"""Carve-outs judged by what a file is, with the real tools as oracles: a Go file importing "C"
(go builds its preamble comment as C), a "typo fix" in SQL or YAML under docs/concepts/
(sqlite3 and PyYAML read the two sides differently), and a C comment that gains a line (gcc
compiles `__LINE__` from it). Each is refused; prose typo fixes and in-place comment edits
still pass."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from capdaemon.classify.axes import classify_file
from capdaemon.classify.carveouts import typo_fix
from capdaemon.classify.cgo import imports_c
from capdaemon.classify.commentonly import comment_only_files
from capdaemon.classify.compiled import compile_classifier
from capdaemon.classify.hunks import parse_patch
from capdaemon.classify.prose import code_in_prose
from capdaemon.config import ClassifierConfig
from capdaemon.languages import is_prose
from capdaemon.model import FileChange, FileStatus

from .classify_builders import make_patch, need_tool


def _run(argv: list[str], cwd: Path, **env: str) -> str:
    run = subprocess.run(
        argv,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
        check=False,
    )
    return f"rc={run.returncode}\n{run.stdout}"


# ----------------------------------------------------------------------------- cgo
CGO_BASE = """package main

import (
\t"fmt"

\t// static int answer(void) { return 1; }
\t"C"
)

func main() { fmt.Println(C.answer()) }
"""


def _go_run(tmp: Path, source: str) -> str:
    go = need_tool("go")
    need_tool("gcc")
    (tmp / "go.mod").write_text("module m\n\ngo 1.19\n")
    (tmp / "main.go").write_text(source)
    return _run(
        [go, "run", "."],
        tmp,
        CGO_ENABLED="1",
        GOFLAGS="-mod=mod",
        GOCACHE=str(tmp / ".cache"),
        GOPATH=str(tmp / ".gopath"),
    )


@pytest.mark.slow
def test_an_edit_to_a_cgo_preamble_in_a_grouped_import_is_code(tmp_path: Path) -> None:
    """go builds the comment before "C" in a grouped import as C: editing it changes what the
    program prints, and the comment-only carve-out refuses it."""
    head = CGO_BASE.replace("return 1", "return 2")
    assert _go_run(tmp_path, CGO_BASE) == "rc=0\n1\n"
    assert _go_run(tmp_path, head) == "rc=0\n2\n"
    carve = comment_only_files("main.go", CGO_BASE, head)
    assert not carve
    assert 'imports "C"' in carve.why


_OTHER_IMPORTS = st.lists(st.sampled_from(['"fmt"', '"os"', 'x "strings"', '_ "embed"']))
_C_PATH = st.sampled_from(['"C"', "`C`", '"\\x43"', '"\\103"', '"\\u0043"', '"\\U00000043"'])
_NAME = st.sampled_from(["", "_ ", "C ", ". ", "c "])
_GAP = st.sampled_from(["", " /* x */ ", "\n", " // y\n"])


@st.composite
def _cgo_files(draw: st.DrawFn) -> tuple[str, str]:
    """(base, head): a Go file importing "C" in a generated shape (grouped or not, among
    other imports, named or not, any spelling, comments around, build-tagged or not); head
    changes only the preamble comment."""
    others = draw(_OTHER_IMPORTS)
    spec = draw(_NAME) + draw(_C_PATH)
    tag = draw(st.sampled_from(["", "//go:build cgo\n\n", "// +build linux\n\n"]))
    block = draw(st.sampled_from(["// static int answer(void) { return @; }", "/* int v = @; */"]))
    if draw(st.booleans()):
        at = draw(st.integers(0, len(others)))
        lines = [*others[:at], block, spec, *others[at:]]
        imports = "import" + draw(_GAP) + "(\n\t" + "\n\t".join(lines) + "\n)\n"
    else:
        imports = "".join(f"import {o}\n" for o in others) + f"{block}\nimport{draw(_GAP)} {spec}\n"
    body = f"{tag}package main\n\n{imports}\nfunc main() {{}}\n"
    return body.replace("@", "1"), body.replace("@", "2")


@given(files=_cgo_files())
@settings(max_examples=150, deadline=None)
def test_no_shape_of_an_import_of_c_gets_the_comment_carve_out(files: tuple[str, str]) -> None:
    """Whatever the import block looks like, a file importing "C" is never comment-only."""
    base, head = files
    assert imports_c(base) and imports_c(head)
    carve = comment_only_files("main.go", base, head)
    assert not carve, (base, head)


@pytest.mark.parametrize(
    "text",
    [
        'package p\n\nimport "fmt"\n\n// "C"\nfunc f() { fmt.Println("C") }\n',
        'package p\n\nimport (\n\t"fmt"\n\t// import "C"\n)\n\nvar s = `C`\n',
    ],
)
def test_a_c_that_is_no_import_does_not_count(text: str) -> None:
    """A "C" in a string or a comment is no cgo import: those files keep the carve-out."""
    assert not imports_c(text)
    head = text.replace("\nfunc", "\n// more\nfunc").replace("\nvar", "\n// more\nvar")
    assert comment_only_files("p.go", text, head)


# ----------------------------------------------------------------------------- typo in prose
def _doctrine(path: str, old: str, new: str) -> FileChange:
    return _change(path, [old], [new])


def _change(path: str, base: list[str], head: list[str], whole: bool = True) -> FileChange:
    """A modified file with its patch and (by default) its whole base and head texts, as the
    daemon reads them for a typo fix under docs/concepts/."""
    texts = {"base_content": "\n".join(base) + "\n", "head_content": "\n".join(head) + "\n"}
    return FileChange(
        path=path,
        status=FileStatus.MODIFIED,
        patch=make_patch(base, head),
        **(texts if whole else {}),  # type: ignore[arg-type]
    )


def _critical(fc: FileChange) -> tuple[bool, str]:
    v = classify_file(fc, compile_classifier(ClassifierConfig()))
    return v.critical, " ".join(v.reasons)


def _sqlite(tmp: Path, statement: str) -> str:
    sqlite3 = need_tool("sqlite3")
    db = tmp / "t.db"
    db.unlink(missing_ok=True)
    script = (
        "CREATE TABLE jobs(id);\nINSERT INTO jobs VALUES (1);\n"
        f"{statement}\nSELECT count(*) FROM jobs;\n"
    )
    return subprocess.run(
        [sqlite3, str(db)], input=script, capture_output=True, text=True, timeout=60, check=False
    ).stdout


@pytest.mark.parametrize(
    ("path", "old", "new"),
    [
        ("docs/concepts/cleanup.sql", "DELET FROM jobs;", "DELETE FROM jobs;"),
        ("docs/concepts/policy.yaml", "enabled: tru", "enabled: true"),
        ("docs/concepts/policy.yml", "enabled: tru", "enabled: true"),
        ("docs/concepts/policy.json", '{"mode": "stric"}', '{"mode": "strict"}'),
        ("docs/concepts/policy.toml", "enabled = fals", "enabled = false"),
        ("docs/concepts/check.py", "x = Tru", "x = True"),
        ("docs/concepts/requirements.txt", "reqests==2.0", "requests==2.0"),
        ("docs/concepts/RULES", "The classifer decides.", "The classifier decides."),
        ("docs/concepts/page.mdx", "The classifer decides.", "The classifier decides."),
    ],
)
def test_a_typo_fix_outside_prose_is_no_carve_out(path: str, old: str, new: str) -> None:
    """Each line alone reads as a typo fix; in code, SQL, data or a file of no known prose
    type under docs/concepts/ it stays a critical rule change."""
    assert typo_fix(parse_patch(make_patch([old], [new])))
    critical, reasons = _critical(_doctrine(path, old, new))
    assert critical, reasons
    assert "a typo fix is carved out in prose only" in reasons


def test_sqlite3_and_pyyaml_say_the_typo_changes_what_runs(tmp_path: Path) -> None:
    """The oracles: sqlite3 deletes the row only with DELETE; PyYAML reads "tru" as a string
    and "true" as a boolean."""
    assert _sqlite(tmp_path, "DELET FROM jobs;") != _sqlite(tmp_path, "DELETE FROM jobs;")
    assert _sqlite(tmp_path, "DELETE FROM jobs;") == "0\n"
    assert yaml.safe_load("enabled: tru") != yaml.safe_load("enabled: true")


@pytest.mark.parametrize(
    "path",
    [
        "docs/concepts/rules.md",
        "docs/concepts/rules.markdown",
        "docs/concepts/rules.rst",
        "docs/concepts/rules.adoc",
        "docs/concepts/rules.asciidoc",
        "docs/concepts/rules.txt",
        "docs/concepts/RULES.MD",
    ],
)
def test_a_typo_fix_in_prose_is_still_carved_out(path: str) -> None:
    """Markdown, reStructuredText, AsciiDoc and plain text keep the typo carve-out."""
    critical, reasons = _critical(
        _doctrine(path, "The classifer decides.", "The classifier decides.")
    )
    assert not critical, reasons
    assert "typo fix only" in reasons


@given(name=st.from_regex(r"[a-z]{1,6}(\.[a-z]{1,5})?", fullmatch=True))
def test_prose_is_only_the_prose_extensions(name: str) -> None:
    """Any other extension, or none, is not prose."""
    ext = name.rsplit(".", 1)[-1] if "." in name else None
    prose = ext in {"md", "markdown", "rst", "rest", "adoc", "asciidoc", "txt", "text"}
    assert is_prose(f"docs/concepts/{name}") is prose


# ----------------------------------------------------------------------------- C line numbers
LINE_BASE = """#include <stdio.h>
#include <assert.h>

int main(void) {
  /* the count */
  printf("%d\\n", __LINE__);
  return 0;
}
"""


def _gcc_run(tmp: Path, source: str) -> str:
    gcc = need_tool("gcc")
    (tmp / "f.c").write_text(source)
    build = subprocess.run(
        [gcc, "-o", "f", "f.c"], cwd=tmp, capture_output=True, text=True, timeout=60, check=False
    )
    assert build.returncode == 0, build.stderr
    return _run([str(tmp / "f")], tmp)


@pytest.mark.parametrize("path", ["f.c", "f.cc"])
def test_a_c_comment_that_gains_a_line_moves_line_and_is_refused(tmp_path: Path, path: str) -> None:
    """gcc prints another __LINE__ once the comment above it has one more line: refused.
    The same comment reworded on its one line prints the same and keeps the carve-out."""
    longer = LINE_BASE.replace("/* the count */", "/* the count\n     of lines */")
    reworded = LINE_BASE.replace("/* the count */", "/* the line count */")
    assert _gcc_run(tmp_path, LINE_BASE) != _gcc_run(tmp_path, longer)
    assert _gcc_run(tmp_path, LINE_BASE) == _gcc_run(tmp_path, reworded)
    carve = comment_only_files(path, LINE_BASE, longer)
    assert not carve
    assert "__LINE__" in carve.why
    assert comment_only_files(path, LINE_BASE, reworded)
    removed = comment_only_files(path, LINE_BASE.replace("  /* the count */\n", ""), LINE_BASE)
    assert not removed


_LINE_WORDS = st.text(alphabet="abc \n", max_size=12)


@given(
    before=_LINE_WORDS,
    after=_LINE_WORDS,
    block=st.booleans(),
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_c_comment_edit_passes_exactly_when_no_code_moves(
    before: str, after: str, block: bool
) -> None:
    """A generated comment edit above code: carved out exactly when it keeps the line count
    (then every code token keeps its line), refused otherwise."""

    def comment(text: str) -> str:
        return f"/* {text} */" if block else "".join(f"// {t}\n" for t in text.split("\n"))

    def program(text: str) -> str:
        return f"int f(void) {{\n  int a = 1;\n{comment(text)}\n  return a + __LINE__;\n}}\n"

    base, head = program(before), program(after)
    carve = comment_only_files("f.c", base, head)
    if base == head:
        return
    assert bool(carve) is (base.count("\n") == head.count("\n")), (base, head, carve.why)


# ----------------------------------------------------------------------------- code in prose
GAP = ["", "Some prose.", "", "More prose.", ""]  # more than a hunk's context apart
DOC = [
    "# Rules",
    *GAP,
    "The classifer decides.",  # 6
    *GAP,
    "```pyhton",  # 12
    "DELET FROM jobs;",  # 13
    "```",
    *GAP,
    "Run `capdaemon chek` first; the classifer decides.",  # 20
    *GAP,
    "    DELET FROM jobs;",  # 26
    *GAP,
    ">>> enabled = tru",  # 32
    *GAP,
    "Example::",
    "",
    "  DELET FROM jobs;",  # 40
    *GAP,
    "The end.",
]


def _doc_edit(path: str, lines: list[str], at: int, old: str, new: str) -> tuple[bool, str]:
    head = list(lines)
    head[at] = head[at].replace(old, new)
    assert head != lines
    return _critical(_change(path, lines, head))


@pytest.mark.parametrize(
    ("path", "at", "old", "new", "why"),
    [
        ("rules.md", 13, "DELET", "DELETE", "code fence"),
        ("rules.md", 12, "pyhton", "python", "code fence"),  # doc-test runners now run it
        ("rules.md", 20, "chek", "check", "inline code"),
        ("rules.md", 26, "DELET", "DELETE", "code block"),
        ("rules.md", 32, "tru", "true", "doctest"),
        ("rules.rst", 13, "DELET", "DELETE", "code fence"),
        ("rules.rst", 26, "DELET", "DELETE", "indented"),
        ("rules.rst", 40, "DELET", "DELETE", "literal block"),
        ("rules.txt", 32, "tru", "true", "doctest"),
    ],
)
def test_code_inside_a_prose_file_is_no_typo(
    path: str, at: int, old: str, new: str, why: str
) -> None:
    """In a Markdown, reStructuredText or plain-text file, a "typo" inside a code fence, an
    inline code span, an indented block, a doctest or an rst literal block is code."""
    critical, reasons = _doc_edit(f"docs/concepts/{path}", DOC, at, old, new)
    assert critical and why in reasons, reasons


def test_markdown_blocks_are_found_where_commonmark_puts_them() -> None:
    """A fence inside a block quote or a list, and an HTML block, are code to markdown-it's
    CommonMark parser: a typo there is refused; a list item's indented paragraph is prose."""
    lines = [
        "# Rules",
        "",
        "> ```sql",
        "> DELET FROM jobs;",
        "> ```",
        "",
        "<script>",
        "enabled = tru",
        "</script>",
        "",
        "- Item",
        "",
        "    The classifer decides.",
        "",
    ]
    for at, old, new in ((3, "DELET", "DELETE"), (7, "tru", "true")):
        critical, reasons = _doc_edit("docs/concepts/rules.md", lines, at, old, new)
        assert critical and "code fence, code block or HTML block" in reasons, reasons
    critical, reasons = _doc_edit("docs/concepts/rules.md", lines, 12, "classifer", "classifier")
    assert not critical, reasons


def test_prose_around_code_keeps_the_typo_carve_out() -> None:
    """The prose of the same file, outside the code (before or after backticks on a line,
    right below a closed fence), is still typo-fixable."""
    for at in (6, 20):
        head = list(DOC)
        head[at] = head[at].replace("classifer", "classifier")
        critical, reasons = _critical(_change("docs/concepts/rules.md", DOC, head))
        assert not critical, reasons
    below = ["# Rules", "", "```", "a = 1", "b = 2", "c = 3", "```", "The classifer decides."]
    critical, reasons = _doc_edit("docs/concepts/rules.md", below, 7, "classifer", "classifier")
    assert not critical, reasons  # the whole file shows the fence closed above


def test_a_long_code_block_is_found_on_the_whole_file() -> None:
    """A "typo" deep inside a fenced block, its fences out of the patch's view, is code: the
    whole file shows the block; without the whole file the carve-out is refused."""
    sql = [f"UPDATE jobs SET n = {i};" for i in range(12)]
    lines = ["# Rules", "", "```sql", *sql[:6], "DELET FROM jobs;", *sql[6:], "```", "", "End."]
    critical, reasons = _doc_edit("docs/concepts/rules.md", lines, 9, "DELET", "DELETE")
    assert critical and "code fence" in reasons, reasons
    prose = ["# Rules", "", "The classifer decides.", ""]
    head = [prose[0], prose[1], "The classifier decides.", ""]
    critical, reasons = _critical(_change("docs/concepts/rules.md", prose, head, whole=False))
    assert critical and "whole file unavailable" in reasons, reasons
    critical, reasons = _critical(_change("docs/concepts/rules.txt", prose, head, whole=False))
    assert not critical, reasons  # plain text has no blocks: its patch is enough


def test_front_matter_is_data_not_prose() -> None:
    """YAML front matter at the top of a Markdown file is read by site generators."""
    lines = ["---", "draft: tru", "---", "", "# Rules", "", "Prose."]
    critical, reasons = _doc_edit("docs/concepts/rules.md", lines, 1, "tru", "true")
    assert critical and "front matter" in reasons, reasons


def test_an_asciidoc_listing_block_is_code() -> None:
    """AsciiDoc's `----` listing block holds code; in Markdown `----` is a rule, not a fence."""
    lines = ["= Rules", "", "----", "DELET FROM jobs;", "----", "", "Prose."]
    critical, reasons = _doc_edit("docs/concepts/rules.adoc", lines, 3, "DELET", "DELETE")
    assert critical and "code fence" in reasons, reasons
    md = ["# Rules", "", "----", "", "The classifer decides.", ""]
    critical, reasons = _doc_edit("docs/concepts/rules.md", md, 4, "classifer", "classifier")
    assert not critical, reasons


_MD_LINES = st.sampled_from(
    [
        "",
        "The classifer decides.",
        "- Item one",
        "> Quoted prose",
        "> ```",
        "```",
        "```sql",
        "~~~",
        "````",
        "    indented",
        "  two spaces",
        "<div>",
        "</div>",
        "<script>",
        "</script>",
        "DELET FROM jobs;",
        "# Heading",
        "---",
    ]
)


@given(lines=st.lists(_MD_LINES, min_size=1, max_size=30), data=st.data())
@settings(max_examples=300, deadline=None)
def test_every_commonmark_code_line_is_refused(lines: list[str], data: st.DataObject) -> None:
    """markdown-it-py as the oracle: in any generated Markdown file, an edit to a line it
    puts in a fenced or indented code block or an HTML block is never prose."""
    doc = "\n".join(lines) + "\n"
    code = {
        n
        for tok in MarkdownIt("commonmark").parse(doc)
        if tok.type in ("fence", "code_block", "html_block") and tok.map
        for n in range(tok.map[0], tok.map[1])
    }
    code &= {i for i, ln in enumerate(lines) if ln.strip()}
    if not code:
        return
    at = data.draw(st.sampled_from(sorted(code)))
    head = list(lines)
    head[at] = head[at] + " x"
    hunks = parse_patch(make_patch(lines, head))
    why = code_in_prose("docs/concepts/r.md", hunks, (doc, "\n".join(head) + "\n"))
    assert why, (lines, at)
