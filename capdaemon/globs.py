"""Path normalisation and gitignore-style glob matching (pathspec), for classifier and scopes."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pathspec


class PathError(ValueError):
    """A path that cannot be normalised safely (absolute, escaping with `..`, empty, NUL)."""


class GlobError(ValueError):
    """A glob pattern that cannot be compiled."""


def normalize_path(path: str) -> str:
    """Normalise a repository-relative path: NFC, `/` separators, no `./`, no `..` escape.

    Raises PathError for absolute paths, paths that climb out of the repository, empty
    paths and paths with NUL or control characters.
    """
    if not isinstance(path, str) or path == "":
        raise PathError("empty path")
    if "\x00" in path or any(unicodedata.category(ch) == "Cc" for ch in path):
        raise PathError(f"control character in path {path!r}")
    p = unicodedata.normalize("NFC", path)
    if p.startswith("/") or (len(p) > 1 and p[1] == ":" and p[0].isalpha()):
        raise PathError(f"absolute path {path!r}")
    parts: list[str] = []
    for part in p.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise PathError(f"path {path!r} climbs out of the repository")
            parts.pop()
            continue
        parts.append(part)
    if not parts:
        raise PathError(f"path {path!r} names the repository root")
    return "/".join(parts)


# Latin look-alikes from Cyrillic and Greek that an attacker can use to dodge a glob
# ("ехamples/" with Cyrillic е and х). Folding maps them to ASCII for the *restrictive*
# lists only; carve-outs never fold, so a look-alike folder is never treated as safe.
_CONFUSABLES = str.maketrans(
    {
        "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i",
        "ј": "j", "ѕ": "s", "ԁ": "d", "һ": "h", "ӏ": "l", "ԛ": "q", "ԝ": "w", "к": "k",
        "м": "m", "т": "t", "в": "b", "н": "h", "А": "A", "В": "B", "Е": "E", "К": "K",
        "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T", "Х": "X", "У": "Y",
        "α": "a", "ο": "o", "ρ": "p", "ν": "v", "ι": "i", "κ": "k", "τ": "t", "υ": "u",
        "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M",
        "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    }
)  # fmt: skip


def fold_path(path: str) -> str:
    """A lower-case, NFKC, look-alike-folded form of a path, for restrictive matching only."""
    return unicodedata.normalize("NFKC", path).translate(_CONFUSABLES).casefold()


def is_plain_ascii(path: str) -> bool:
    """True when the path is printable ASCII (carve-outs require it)."""
    return path.isascii() and path.isprintable()


@dataclass(frozen=True)
class GlobSet:
    """A compiled list of gitignore-style globs.

    `case_insensitive` lower-cases patterns and paths, and also matches the look-alike
    folded form of the path (so restrictive lists cannot be dodged with Unicode tricks).
    """

    patterns: tuple[str, ...]
    case_insensitive: bool = True
    _spec: pathspec.PathSpec = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        pats = [p.casefold() for p in self.patterns] if self.case_insensitive else self.patterns
        try:
            spec = pathspec.PathSpec.from_lines("gitignore", pats)
        except Exception as exc:  # pathspec raises several types for bad patterns
            raise GlobError(str(exc)) from exc
        object.__setattr__(self, "_spec", spec)

    @classmethod
    def of(cls, patterns: Iterable[str], case_insensitive: bool = True) -> GlobSet:
        """Compile patterns (validating each, so errors name the bad one)."""
        pats = tuple(patterns)
        for p in pats:
            validate_glob(p)
        return cls(pats, case_insensitive)

    def match(self, path: str) -> bool:
        """True when the (normalised) path matches any pattern."""
        if not self.patterns:
            return False
        if not self.case_insensitive:
            return self._spec.match_file(path)
        lowered = path.casefold()
        if self._spec.match_file(lowered):
            return True
        folded = fold_path(path)
        return folded != lowered and self._spec.match_file(folded)

    def matching(self, path: str) -> list[str]:
        """The patterns that match the path (for reasons in reports)."""
        return [p for p in self.patterns if GlobSet((p,), self.case_insensitive).match(path)]

    def __bool__(self) -> bool:
        return bool(self.patterns)


def validate_glob(pattern: str) -> None:
    """Raise GlobError when a pattern is not a usable gitignore-style glob."""
    if not isinstance(pattern, str):
        raise GlobError(f"glob must be a string, not {type(pattern).__name__}")
    if not pattern.strip():
        raise GlobError("empty glob")
    if pattern.startswith("!"):
        raise GlobError(f"negated glob {pattern!r} is not allowed (lists can only add)")
    if "\x00" in pattern or "\n" in pattern:
        raise GlobError(f"control character in glob {pattern!r}")
    if pattern.count("[") != pattern.count("]"):
        raise GlobError(f"unbalanced brackets in glob {pattern!r}")
    try:
        pathspec.PathSpec.from_lines("gitignore", [pattern])
    except Exception as exc:
        raise GlobError(f"bad glob {pattern!r}: {exc}") from exc


def any_match(globs: Sequence[GlobSet], path: str) -> bool:
    """True when any of the glob sets matches."""
    return any(g.match(path) for g in globs)
