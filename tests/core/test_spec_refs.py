"""Every `SPEC x.y` and short code (L1.C3, P0, R5, F2 …) cited in the repo is in docs/spec.md."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
SPEC_DOC = "docs/spec.md"
SCAN_DIRS = (
    "capdaemon", "ghsandbox", "tests", "bench", "docs", "config", "schemas", "scripts", "systemd",
)  # fmt: skip
SCAN_TOP = ("README.md",)
SUFFIXES = frozenset({".py", ".md", ".yml", ".yaml", ".json", ".sh", ".toml", ".service"})
THIS_FILE = "tests/core/test_spec_refs.py"  # the scanner's own samples are not references

# Look-alikes of a code that are not references, each with why.
NOT_REFERENCES = {
    ("tests/core/test_config_load.py", "P9"): "an unknown severity the config loader must refuse",
}

_NUM = r"\d+(?:\.\d+)?"
# "SPEC 2.5", "SPEC section 2", "SPEC 2.2-2.4", "SPEC 2.5, 6.3"; not CHECK_SPEC_KEYS or SPEC.json.
SECTION_RE = re.compile(
    rf"(?<![\w.])SPEC(?:\s+section)?\s+(?P<list>{_NUM}(?:\s*(?:,|-|–|and)\s*{_NUM})*)"
)
_ONE = r"(?:L\d\.C\d+|L\d|(?:RUN|SG|TF|FC|BR|IN|PR|BM|BL|R|F|Y|P)\d{1,2})"
# A code stands alone: not inside a word, a path, hex (0xF2, #F2F2F2, %F2, \xF2) or a
# linter code (F401); "TF1-TF3" is a range.
CODE_RE = re.compile(rf"(?<![\w#%\\/.:$&+-])(?P<code>{_ONE})(?:[-–](?P<end>{_ONE}))?(?![\w-]|\.\w)")
HEADING_RE = re.compile(rf"^#{{2,3}} (?P<num>{_NUM})\.? ")
REFERENCE_ONLY_RE = re.compile(r"^<!-- reference-only: \S.* -->$")


@dataclass(frozen=True)
class Ref:
    """One cited section or code, where it was found."""

    path: str
    line: int
    kind: str  # "section" or "code"
    name: str


def _expand_sections(text: str) -> list[str]:
    """'2.2-2.4' → 2.2, 2.3, 2.4; '2.5, 3' → 2.5, 3; a cross-section range keeps its ends."""
    out: list[str] = []
    for part in re.split(r"\s*(?:,|and)\s*", text.strip()):
        ends = re.split(r"\s*[-–]\s*", part)
        if len(ends) == 2:
            a, b = ends
            a_major, _, a_minor = a.partition(".")
            b_major, _, b_minor = b.partition(".")
            if a_major == b_major and a_minor and b_minor and int(a_minor) <= int(b_minor):
                out += [f"{a_major}.{m}" for m in range(int(a_minor), int(b_minor) + 1)]
                continue
            if not a_minor and not b_minor and int(a) <= int(b):
                out += [str(m) for m in range(int(a), int(b) + 1)]
                continue
        out += ends
    return out


def _split_code(code: str) -> tuple[str, int] | None:
    m = re.fullmatch(r"([A-Z]+)(\d+)", code)
    return (m[1], int(m[2])) if m else None


def _expand_codes(code: str, end: str | None) -> list[str]:
    """'TF1' → TF1; 'TF1'..'TF3' → TF1, TF2, TF3 (a range of two prefixes keeps its ends)."""
    a, b = _split_code(code), _split_code(end) if end else None
    if a and b and a[0] == b[0] and a[1] <= b[1]:
        return [f"{a[0]}{n}" for n in range(a[1], b[1] + 1)]
    return [code] + ([end] if end else [])


def refs_in_text(path: str, text: str, start_line: int = 1) -> Iterator[Ref]:
    """The section and code references in plain text (line numbers from `start_line`)."""
    for i, line in enumerate(text.splitlines(), start_line):
        if "SPEC" in line:
            for m in SECTION_RE.finditer(line):
                for num in _expand_sections(m["list"]):
                    yield Ref(path, i, "section", num)
        for m in CODE_RE.finditer(line):
            for code in _expand_codes(m["code"], m["end"]):
                if (path, code) not in NOT_REFERENCES:
                    yield Ref(path, i, "code", code)


def refs_in_python(path: str, source: str) -> Iterator[Ref]:
    """References in a Python file's comments and strings only (a variable `P1` is no citation)."""
    if not SECTION_RE.search(source) and not CODE_RE.search(source):
        return  # the common case: no tokenizing
    kinds = {tokenize.COMMENT, tokenize.STRING}
    kinds |= {getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in kinds:
            yield from refs_in_text(path, tok.string, tok.start[0])


def scanned_files(root: Path) -> Iterator[tuple[str, str]]:
    """(relative path, text) of every file whose references are checked."""
    paths: list[Path] = [root / name for name in SCAN_TOP]
    for d in SCAN_DIRS:
        paths += [p for p in (root / d).rglob("*") if p.suffix in SUFFIXES and p.is_file()]
    for p in sorted(paths):
        rel = p.relative_to(root).as_posix()
        if rel != THIS_FILE and "__pycache__" not in rel:
            yield rel, p.read_text(encoding="utf-8")


def references(files: Iterable[tuple[str, str]]) -> list[Ref]:
    """Every reference in the given files."""
    out: list[Ref] = []
    for rel, text in files:
        scan = refs_in_python if rel.endswith(".py") else refs_in_text
        out += scan(rel, text)
    return out


@dataclass(frozen=True)
class SpecDoc:
    """What docs/spec.md defines: its numbered sections and its glossary's codes."""

    sections: frozenset[str]
    reference_only: frozenset[str]
    codes: frozenset[str]


def parse_spec(text: str) -> SpecDoc:
    """Sections from `## N.` / `### N.M` headings; codes from section 1's first table cells."""
    sections: set[str] = set()
    reference_only: set[str] = set()
    codes: set[str] = set()
    current = ""
    for line in text.splitlines():
        if m := HEADING_RE.match(line):
            current = m["num"]
            sections.add(current)
        elif REFERENCE_ONLY_RE.match(line) and current:
            reference_only.add(current)
        elif current == "1" and line.startswith("| **"):
            cell = line.split("|")[1].replace("*", "")
            for m in CODE_RE.finditer(cell):
                codes.update(_expand_codes(m["code"], m["end"]))
    return SpecDoc(frozenset(sections), frozenset(reference_only), frozenset(codes))


def problems(spec_text: str, refs: list[Ref]) -> list[str]:
    """Undefined references (file:line) and sections cited nowhere without a reference-only note."""
    doc = parse_spec(spec_text)
    out = [
        f"{r.path}:{r.line}: SPEC {r.name} is not a section of {SPEC_DOC}"
        for r in refs
        if r.kind == "section" and r.name not in doc.sections
    ]
    out += [
        f"{r.path}:{r.line}: code {r.name} is not in {SPEC_DOC}'s glossary (section 1)"
        for r in refs
        if r.kind == "code" and r.name not in doc.codes
    ]
    cited = {r.name for r in refs if r.kind == "section" and r.path != SPEC_DOC}
    for s in sorted(doc.sections - doc.reference_only):
        if not any(c == s or c.startswith(s + ".") for c in cited):
            out.append(f"{SPEC_DOC}: section {s} is cited nowhere and not marked reference-only")
    used = {r.name for r in refs if r.kind == "code" and r.path != SPEC_DOC}
    out += [f"{SPEC_DOC}: code {c} is used nowhere" for c in sorted(doc.codes - used)]
    return out


@pytest.fixture(scope="module")
def repo_refs() -> list[Ref]:
    return references(scanned_files(ROOT))


def test_every_reference_is_defined(repo_refs: list[Ref]) -> None:
    """Each SPEC section and code cited anywhere is defined, and each section is cited."""
    spec = (ROOT / SPEC_DOC).read_text(encoding="utf-8")
    assert problems(spec, repo_refs) == []


def test_every_threat_model_code_is_in_the_glossary() -> None:
    """Each row code of the threat model (`**XY1**`), even of a new family, is in the glossary."""
    doc = parse_spec((ROOT / SPEC_DOC).read_text(encoding="utf-8"))
    text = (ROOT / "docs" / "threat-model.md").read_text(encoding="utf-8")
    missing = [
        f"docs/threat-model.md:{i}: {m[1]} is not in {SPEC_DOC}'s glossary (section 1)"
        for i, line in enumerate(text.splitlines(), 1)
        for m in re.finditer(r"\*\*([A-Z]{1,4}\d{1,3})\*\*", line)
        if m[1] not in doc.codes
    ]
    assert missing == []


def test_the_repository_cites_sections_and_codes(repo_refs: list[Ref]) -> None:
    """The scan finds the citations the code makes (it is not looking at nothing)."""
    in_code = {(r.kind, r.name) for r in repo_refs if r.path.startswith("capdaemon/")}
    assert {("section", "2.5"), ("section", "6.3"), ("section", "7")} <= in_code
    assert {("code", "L1.C3"), ("code", "P0"), ("code", "R5"), ("code", "TF2")} <= in_code
    in_tests = {(r.kind, r.name) for r in repo_refs if r.path.startswith("tests/")}
    assert {("section", "5.6"), ("code", "F1"), ("code", "F2"), ("code", "R7")} <= in_tests


def test_a_missing_section_or_code_is_named_by_file_and_line(repo_refs: list[Ref]) -> None:
    """Drop section 2.5 and the code R5 from the document: each citation is reported."""
    spec = (ROOT / SPEC_DOC).read_text(encoding="utf-8")
    broken = spec.replace("### 2.5 ", "### 2.5x ").replace("| **R5** |", "| R5 |")
    found = problems(broken, repo_refs)
    where = r"(capdaemon|tests)/[\w/]+\.py:\d+: "
    assert any(re.fullmatch(where + "SPEC 2.5 is not a section of docs/spec.md", p) for p in found)
    assert any(re.fullmatch(where + "code R5 is not in .*", p) for p in found)
    new = references([("capdaemon/new.py", '# x\n"""Keeps R4 out (SPEC 11.2)."""\n')])
    found = problems(spec, repo_refs + new)
    assert found == [
        "capdaemon/new.py:2: SPEC 11.2 is not a section of docs/spec.md",
        "capdaemon/new.py:2: code R4 is not in docs/spec.md's glossary (section 1)",
    ]


def test_a_section_cited_nowhere_must_say_so() -> None:
    """A section nobody cites is reported unless it carries a reference-only note."""
    spec = "## 1. Words\n<!-- reference-only: read by people -->\n## 2. Rules\n### 2.1 One\n"
    assert problems(spec, references([("a.py", "# SPEC 2.1\n")])) == []
    assert problems(spec, references([("a.py", "# nothing\n")])) == [
        f"{SPEC_DOC}: section 2 is cited nowhere and not marked reference-only",
        f"{SPEC_DOC}: section 2.1 is cited nowhere and not marked reference-only",
    ]


SAMPLES = [
    ("SPEC 2.5", {"2.5"}, set()),
    ("(SPEC 2.5, 6.3)", {"2.5", "6.3"}, set()),
    ("(SPEC 2.5, 3)", {"2.5", "3"}, set()),
    ("SPEC 2.2-2.4: axes", {"2.2", "2.3", "2.4"}, set()),
    ("SPEC section 2 lists", {"2"}, set()),
    ("as in SPEC 6.1.", {"6.1"}, set()),
    ("CHECK_SPEC_KEYS = 2; SPEC.json; SPEC says so", set(), set()),
    (
        "L1.C3 fails (P0); R5 restores; see TF1-TF3",
        set(),
        {"L1.C3", "P0", "R5", "TF1", "TF2", "TF3"},
    ),
    ("**P3**–**P7**", set(), {"P3", "P7"}),
    ("L4 burn-in", set(), {"L4"}),
    ("0xF2 #F2F2F2 %F2 \\xF2 U+00F2 &#xF2; F2F2", set(), set()),
    ("noqa: F401; E501; capdaemon/L1; sha-R1; R1.x; L1C3", set(), set()),
    ("PR1x PR12345 X-R2 TF1_ SG1-", set(), set()),
]


@pytest.mark.parametrize(("text", "sections", "codes"), SAMPLES)
def test_the_scanner_on_samples(text: str, sections: set[str], codes: set[str]) -> None:
    """What counts as a citation in prose, and what merely looks like one."""
    refs = list(refs_in_text("x.md", text))
    assert {r.name for r in refs if r.kind == "section"} == sections
    assert {r.name for r in refs if r.kind == "code"} == codes


def test_python_code_is_not_prose() -> None:
    """In Python only comments and strings cite: a name `R1` or `Severity.P1` does not."""
    src = 'R1 = 3\nx = Severity.P1\nP2 = f(R1)  # R5 here\ns = "F2 there"\n"""a\n\nb (R6)."""\n'
    found = [(r.line, r.name) for r in refs_in_python("a.py", src)]
    assert found == [(3, "R5"), (4, "F2"), (7, "R6")]


@given(st.binary(min_size=1, max_size=64))
def test_hex_is_never_a_code(data: bytes) -> None:
    """Bytes written as hex in the usual notations never read as a code."""
    text = " ".join(
        ["0x" + data.hex().upper(), "#" + data.hex().upper()]
        + [f"%{b:02X} \\x{b:02X}" for b in data]
    )
    assert [r for r in refs_in_text("x.md", text) if r.kind == "code"] == []


@given(
    st.integers(1, 99),
    st.integers(1, 99),
    st.text(alphabet="abcdefghij ,;:()", max_size=20),
)
def test_a_section_in_any_sentence_is_found(major: int, minor: int, tail: str) -> None:
    """`SPEC a.b` is read as a.b whatever lower-case prose follows it."""
    refs = list(refs_in_text("x.md", f"see SPEC {major}.{minor}{tail}"))
    assert [r.name for r in refs][:1] == [f"{major}.{minor}"]
