"""Path normalisation and gitignore-style glob matching (pathspec), for classifier and scopes.

Import-light on purpose (scope-guard runs before every agent edit): pathspec (~11 ms with
dataclasses, typing and its backend probes) is imported only when a GlobSet is compiled or
a glob validated. `RegexGlobSet` matches with regexes pathspec produced earlier (stored in
a capability snapshot at dispatch), with the same answers as GlobSet and only `re`.
"""

from __future__ import annotations

import os
import re
import unicodedata

TYPE_CHECKING = False  # typing costs ~2 ms to import; every annotation here is a string
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

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
    if path.isascii() and path.isprintable():
        p = path  # printable ASCII: no control character, and NFC already (fast path)
    elif "\x00" in path or any(unicodedata.category(ch) == "Cc" for ch in path):
        raise PathError(f"control character in path {path!r}")
    else:
        p = unicodedata.normalize("NFC", path)
    if p.startswith("/") or (len(p) > 1 and p[1] == ":" and p[0].isalpha()):
        raise PathError(f"absolute path {path!r}")
    split = p.split("/")
    if "" not in split and "." not in split and ".." not in split:
        return p  # nothing to drop or climb: already normal (fast path)
    return _resolve_parts(split, path)


def _resolve_parts(split: list[str], path: str) -> str:
    """Drop empty and `.` parts, let `..` take one back; PathError when it climbs out."""
    parts: list[str] = []
    for part in split:
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
    if path.isascii():  # NFKC and the look-alike table leave ASCII as it is; casefold = lower
        return path.lower()
    return unicodedata.normalize("NFKC", path).translate(_CONFUSABLES).casefold()


def is_plain_ascii(path: str) -> bool:
    """True when the path is printable ASCII (carve-outs require it)."""
    return path.isascii() and path.isprintable()


GLOB_DIALECT = "gitignore"  # pathspec's pattern factory (pathspec>=1.0; "gitwildmatch" warns)


class GlobSet:
    """A compiled list of gitignore-style globs.

    `case_insensitive` lower-cases patterns and paths, and also matches the look-alike
    folded form of the path (so restrictive lists cannot be dodged with Unicode tricks).

    Immutable, compared and hashed by (patterns, case_insensitive), like the frozen
    dataclass it used to be (a plain class so that importing this module stays cheap).
    """

    __slots__ = ("_spec", "case_insensitive", "patterns")
    __match_args__ = ("patterns", "case_insensitive")

    patterns: tuple[str, ...]
    case_insensitive: bool
    _spec: pathspec.PathSpec[pathspec.pattern.Pattern]

    def __init__(self, patterns: tuple[str, ...], case_insensitive: bool = True) -> None:
        import pathspec  # lazily: see the module docstring

        setattr_ = object.__setattr__
        setattr_(self, "patterns", patterns)
        setattr_(self, "case_insensitive", case_insensitive)
        pats = [p.casefold() for p in patterns] if case_insensitive else patterns
        try:
            spec = pathspec.PathSpec.from_lines(GLOB_DIALECT, pats)
        except Exception as exc:  # pathspec raises several types for bad patterns
            raise GlobError(str(exc)) from exc
        setattr_(self, "_spec", spec)

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

    def regexes(self) -> list[tuple[str | None, bool | None]]:
        """Per pattern, in order: (regex source, include) as pathspec compiles it here.

        Case-insensitive sets compile the case-folded pattern, as `match` does. A pattern
        that compiles to a no-op gives (None, None). See `RegexGlobSet` and `pathspec_version`.
        """
        import pathspec

        factory = pathspec.util.lookup_pattern(GLOB_DIALECT)
        out: list[tuple[str | None, bool | None]] = []
        for p in self.patterns:
            pat = factory(p.casefold() if self.case_insensitive else p) if p else None
            out.append(_regex_of(pat))
        return out

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def __repr__(self) -> str:
        return (
            f"{type(self).__qualname__}(patterns={self.patterns!r}, "
            f"case_insensitive={self.case_insensitive!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GlobSet) or other.__class__ is not self.__class__:
            return NotImplemented
        return (self.patterns, self.case_insensitive) == (other.patterns, other.case_insensitive)

    def __hash__(self) -> int:
        return hash((self.patterns, self.case_insensitive))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r} (GlobSet is immutable)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} (GlobSet is immutable)")

    def __reduce__(self) -> tuple[type[GlobSet], tuple[tuple[str, ...], bool]]:
        return (type(self), (self.patterns, self.case_insensitive))


def pathspec_version() -> str | None:
    """The installed pathspec's version, read without importing pathspec (None if unknown).

    Stored regexes are used only when they came from this same version, so that
    `RegexGlobSet` and `GlobSet` can never disagree after a pathspec upgrade.
    """
    import sys

    mod = sys.modules.get("pathspec")
    if mod is not None:
        return getattr(mod, "__version__", None)
    try:
        from importlib.util import find_spec

        spec = find_spec("pathspec")
        if spec is None or not spec.origin:
            return None
        path = os.path.join(os.path.dirname(spec.origin), "_version.py")
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, ImportError, ValueError):
        return None
    m = re.search(r"""^__version__\s*=\s*["']([^"'\s]+)["']\s*$""", text, re.MULTILINE)
    return m.group(1) if m else None


# pathspec.util.normalize_file, as applied by PathSpec.match_file (separators other than "/")
_NORMALIZE_SEPS = tuple(s for s in (os.sep, os.altsep) if s and s != "/")


def _normalize_file(path: str) -> str:
    for sep in _NORMALIZE_SEPS:
        path = path.replace(sep, "/")
    if path.startswith("/"):
        return path[1:]
    if path.startswith("./"):
        return path[2:]
    return path


def _last_match(compiled: Sequence[tuple[re.Pattern[str], bool]], path: str) -> bool:
    """pathspec's rule: the last pattern that matches decides (compiled is in reverse order)."""
    path = _normalize_file(path)
    for rx, include in compiled:
        if rx.search(path) is not None:
            return include
    return False


class RegexGlobSet:
    """GlobSet's matching from regexes pathspec produced before (`GlobSet.regexes()`).

    Same `patterns`, `case_insensitive`, `match`, `matching` and truth value as the GlobSet
    of the same patterns compiled by the pathspec version that produced the regexes; needs
    only `re`. Raises GlobError when the regex list does not fit the patterns.
    """

    __slots__ = ("_compiled", "_each", "case_insensitive", "patterns")

    def __init__(
        self,
        patterns: tuple[str, ...],
        case_insensitive: bool,
        regexes: Sequence[tuple[str | None, bool | None]],
    ) -> None:
        if len(regexes) != len(patterns):
            raise GlobError(f"{len(regexes)} regexes for {len(patterns)} globs")
        each: list[list[tuple[re.Pattern[str], bool]]] = []
        for entry in regexes:
            try:
                source, include = entry
            except (TypeError, ValueError):
                raise GlobError(f"malformed regex entry {entry!r}") from None
            if source is None and include is None:
                each.append([])
                continue
            if not isinstance(source, str) or not isinstance(include, bool):
                raise GlobError(f"malformed regex entry {entry!r}")
            try:
                each.append([(re.compile(source), include)])
            except re.error as exc:
                raise GlobError(f"bad stored regex {source!r}: {exc}") from exc
        self.patterns = patterns
        self.case_insensitive = case_insensitive
        self._each = each
        self._compiled = [c for one in reversed(each) for c in one]

    def _match(self, compiled: Sequence[tuple[re.Pattern[str], bool]], path: str) -> bool:
        if not self.case_insensitive:
            return _last_match(compiled, path)
        lowered = path.casefold()
        if _last_match(compiled, lowered):
            return True
        folded = fold_path(path)
        return folded != lowered and _last_match(compiled, folded)

    def match(self, path: str) -> bool:
        """True when the (normalised) path matches any pattern (as GlobSet.match)."""
        if not self.patterns:
            return False
        return self._match(self._compiled, path)

    def matching(self, path: str) -> list[str]:
        """The patterns that match the path (as GlobSet.matching)."""
        return [p for p, c in zip(self.patterns, self._each, strict=True) if self._match(c, path)]

    def searchers(self, keep: Callable[[str], bool]) -> list[re.Pattern[str]] | None:
        """The regexes of the patterns `keep` accepts: `match(path)` is True, for a printable
        ASCII path that no dropped pattern can match, exactly when one of them finds
        (`search`) the path (lower-cased for a case-insensitive set). None when some
        pattern excludes (then order decides: use `match`)."""
        out: list[re.Pattern[str]] = []
        for pattern, compiled in zip(self.patterns, self._each, strict=True):
            for rx, include in compiled:
                if not include:
                    return None
                if keep(pattern):
                    out.append(rx)
        return out

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def __repr__(self) -> str:
        return (
            f"{type(self).__qualname__}(patterns={self.patterns!r}, "
            f"case_insensitive={self.case_insensitive!r})"
        )


def compile_glob(pattern: str, *, case_insensitive: bool = True) -> tuple[str | None, bool | None]:
    """Validate one glob and compile it once: (regex source, include), or (None, None) for a
    pattern that matches nothing. Raises GlobError naming the pattern."""
    _check_glob_text(pattern)
    import pathspec

    try:
        factory = pathspec.util.lookup_pattern(GLOB_DIALECT)
        pat = factory(pattern.casefold() if case_insensitive else pattern)
    except Exception as exc:
        raise GlobError(f"bad glob {pattern!r}: {exc}") from exc
    return _regex_of(pat)


def _regex_of(pat: object) -> tuple[str | None, bool | None]:
    """(regex source, include) of a compiled pathspec pattern; (None, None) for a no-op."""
    from pathspec.pattern import RegexPattern

    if not isinstance(pat, RegexPattern) or pat.include is None or pat.regex is None:
        return None, None
    return pat.regex.pattern, pat.include


def _check_glob_text(pattern: str) -> None:
    """The cheap, text-only checks of validate_glob."""
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


def validate_glob(pattern: str) -> None:
    """Raise GlobError when a pattern is not a usable gitignore-style glob."""
    _check_glob_text(pattern)
    import pathspec

    try:
        pathspec.PathSpec.from_lines(GLOB_DIALECT, [pattern])
    except Exception as exc:
        raise GlobError(f"bad glob {pattern!r}: {exc}") from exc


def any_match(globs: Sequence[GlobSet], path: str) -> bool:
    """True when any of the glob sets matches."""
    return any(g.match(path) for g in globs)
