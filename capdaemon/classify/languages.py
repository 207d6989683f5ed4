"""Which file types have an exact tokenizer here, by extension (no parser is imported)."""

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
