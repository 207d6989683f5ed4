"""What a file is, by its name: which file types have an exact tokenizer here, which changed
files are worth reading whole for the comment-only carve-out (a cheap look at the patch; no
parser is imported), and which are prose, the only files a typo fix may be carved out in."""

from __future__ import annotations

import re

PYTHON = "python"
HTML = "html"

EXT_LANG: dict[str, str] = {
    "py": PYTHON, "pyi": PYTHON,
    "c": "c", "h": "c",
    "cc": "cpp", "cpp": "cpp", "cxx": "cpp", "hpp": "cpp", "hh": "cpp", "hxx": "cpp",
    "java": "java",
    "js": "javascript", "mjs": "javascript", "cjs": "javascript", "jsx": "javascript",
    "ts": "typescript", "mts": "typescript", "cts": "typescript", "tsx": "tsx",
    "go": "go", "rs": "rust",
    "html": HTML, "htm": HTML,
}  # fmt: skip


def language_of(path: str) -> str | None:
    """The language with an exact tokenizer here for a path, or None."""
    name = path.rsplit("/", 1)[-1]
    if "." not in name.lstrip("."):
        return None
    return EXT_LANG.get(name.rsplit(".", 1)[-1].casefold())


_COMMENT_STARTS: dict[str, tuple[str, ...]] = {PYTHON: ("#",)}
_C_STARTS = ("//", "/*", "*")


def wants_whole_files(path: str, patch: str | None) -> bool:
    """Whether a modified file is worth reading whole for a carve-out: for the comment-only
    one, its language has an exact tokenizer and every changed line of the patch is blank or
    starts like a comment (HTML always: its comments span lines freely); for the typo fix, a
    Markdown, reStructuredText or AsciiDoc file under a typo-fix folder (its code blocks are
    found on the whole file). Only a prefilter: the carve-outs read the whole files."""
    if patch and wants_whole_prose(path):
        return True
    language = language_of(path)
    if language is None or not patch:
        return False
    if language == HTML:
        return True
    starts = _COMMENT_STARTS.get(language, _C_STARTS)
    changed = False
    for line in patch.split("\n"):
        if line[:1] not in ("+", "-"):
            continue
        changed = True
        text = line[1:].strip()
        if text and not text.startswith(starts):
            return False
    return changed


# Prose: Markdown, reStructuredText, AsciiDoc, plain text. Nothing else is (code, SQL, YAML,
# JSON, TOML, CSV, templates, files without an extension): there a "typo fix" changes what runs
# or what is read (`DELET` → `DELETE`, `tru` → `true`).
PROSE_EXTENSIONS: frozenset[str] = frozenset(
    {"md", "markdown", "rst", "rest", "adoc", "asciidoc", "txt", "text"}
)
# Plain-text names that tools read as data (pip, CMake, crawlers): never prose.
_TOOL_TEXT = re.compile(
    r"(?:.*requirements.*|.*constraints.*|cmakelists|robots|llms(?:-full)?)\.txt", re.IGNORECASE
)


def is_prose(path: str) -> bool:
    """Whether a file is prose (the typo carve-out's only domain), by its name."""
    name = path.rsplit("/", 1)[-1]
    if "." not in name.lstrip(".") or _TOOL_TEXT.fullmatch(name):
        return False
    return name.rsplit(".", 1)[-1].casefold() in PROSE_EXTENSIONS


# Where a typo fix is carved out even though the folder is critical (SPEC 2.3 names it).
TYPO_FIX_DIRS: tuple[str, ...] = ("docs/concepts/",)
# Prose formats with code blocks, front matter or literal blocks: a typo fix in one is judged
# on the whole file, where those blocks can be found (plain text has none).
BLOCK_PROSE_EXTENSIONS: frozenset[str] = PROSE_EXTENSIONS - {"txt", "text"}


def wants_whole_prose_type(path: str) -> bool:
    """Whether a typo fix in this file is judged on its whole text: a prose format with code
    blocks (Markdown, reStructuredText, AsciiDoc)."""
    name = path.rsplit("/", 1)[-1]
    ext = name.rsplit(".", 1)[-1].casefold() if "." in name.lstrip(".") else ""
    return ext in BLOCK_PROSE_EXTENSIONS and is_prose(path)


def wants_whole_prose(path: str) -> bool:
    """Whether a changed file's texts are read for the typo carve-out: a prose format with
    code blocks under a typo-fix folder."""
    return path.startswith(TYPO_FIX_DIRS) and wants_whole_prose_type(path)


def prose_kinds() -> str:
    """The prose file types, for a refusal's reason text."""
    return (
        "Markdown, reStructuredText, AsciiDoc or plain text ("
        + ", ".join(f".{e}" for e in sorted(PROSE_EXTENSIONS))
        + ")"
    )
