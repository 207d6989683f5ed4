"""Which file types have an exact tokenizer here, and which changed files are worth reading
whole for the comment-only carve-out (a cheap look at the patch; no parser is imported)."""

from __future__ import annotations

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
    """Whether a modified file is worth reading whole for the comment-only carve-out: its
    language has an exact tokenizer and every changed line of the patch is blank or starts
    like a comment (HTML always: its comments span lines freely). Only a prefilter: the
    carve-out itself compares the whole files' tokens."""
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
