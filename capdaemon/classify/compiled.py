"""The classifier config compiled once: path matchers, content scanners, `compile_classifier`."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from capdaemon.classify.literals import required_literals
from capdaemon.config import ClassifierConfig
from capdaemon.globs import compile_glob, fold_path

_SECRET_LABELS: dict[str, str] = {
    r"-----BEGIN (?:[A-Z ]+ )?PRIVATE KEY-----": "a private key",
    r"\bgh[pousr]_[A-Za-z0-9]{36,}\b": "a GitHub token",
    r"\bgithub_pat_[A-Za-z0-9_]{40,}\b": "a GitHub token",
    r"\bAKIA[0-9A-Z]{16}\b": "an AWS access key",
    r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b": "a Slack token",
    r"\bsk-[A-Za-z0-9_-]{20,}\b": "an API secret key",
    r"\bAIza[0-9A-Za-z_-]{35}\b": "a Google API key",
    r"\bglpat-[A-Za-z0-9_-]{20,}\b": "a GitLab token",
}


# ----------------------------------------------------------------------------- matchers
class PathMatcher:
    """A precompiled gitignore-style glob list: one union regex, per-pattern regexes for reasons.

    `restrictive` matchers compare case-insensitively and also try the look-alike-folded form
    (like GlobSet); carve-out matchers (`restrictive=False`) are exact and ASCII-only callers.
    `files_only` matchers match a path only as a file: a glob never matches it through a
    directory on its path (gitignore's `README*` matches `src/README.d/loader.py` because
    it matches the folder `src/README.d`; a file-name carve-out must not).
    """

    __slots__ = ("_each", "_union", "files_only", "patterns", "restrictive")

    def __init__(
        self, patterns: Iterable[str], *, restrictive: bool = True, files_only: bool = False
    ) -> None:
        self.patterns = tuple(patterns)
        self.restrictive = restrictive
        self.files_only = files_only
        each: list[tuple[str, re.Pattern[str]]] = []
        for pat in self.patterns:
            # One validated compile per glob, in the same dialect as capdaemon.globs.GlobSet.
            source, include = compile_glob(pat, case_insensitive=restrictive)
            if include and source is not None:
                rx = source.replace("(?P<ps_d>", "(?:")
                each.append((pat, re.compile(rx)))
        self._each = tuple(each)
        self._union = re.compile("|".join(f"(?:{rx.pattern})" for _, rx in each)) if each else None

    def _forms(self, path: str) -> tuple[str, ...]:
        return path_forms(path) if self.restrictive else (path,)

    def match(self, path: str) -> bool:
        """True when any pattern matches the (normalised) path."""
        union = self._union
        if union is None:
            return False
        if self.files_only:  # the whole path, never a folder prefix of it
            return any(union.fullmatch(f) is not None for f in self._forms(path))
        if not self.restrictive:
            return union.match(path) is not None
        forms = path_forms(path)
        if union.match(forms[0]) is not None:
            return True
        return len(forms) > 1 and union.match(forms[1]) is not None

    def hits(self, path: str) -> list[str]:
        """The patterns that match (empty when none)."""
        if not self.match(path):
            return []
        forms = self._forms(path)
        out: list[str] = []
        for pat, rx in self._each:
            found = (rx.fullmatch(f) if self.files_only else rx.match(f) for f in forms)
            if pat not in out and any(m is not None for m in found):
                out.append(pat)
        return out


@functools.lru_cache(maxsize=16384)
def path_forms(path: str) -> tuple[str, ...]:
    """The forms a restrictive list matches: lower-cased, plus look-alike-folded when different."""
    low = path.casefold()
    if path.isascii():
        return (low,)
    folded = fold_path(path)
    return (low,) if folded == low else (low, folded)


class ContentScanner:
    """Regexes searched in added lines, behind a prefilter that never misses.

    Patterns with required literals are only tried when one of their literals occurs in the
    added text (a C-speed substring test); the others share one regex prefilter with any
    leading `\\b` dropped (which only widens it).
    """

    __slots__ = ("_each", "_literals", "_loose")

    def __init__(self, patterns: Iterable[str], labels: Callable[[int, str], str]) -> None:
        pats = [p for p in patterns if p]
        each = []
        loose = []
        for i, p in enumerate(pats):
            lits = required_literals(p)
            each.append((re.compile(p), labels(i, p), lits))
            if lits is None:
                loose.append(p[2:] if p.startswith("\\b") else p)
        self._each = tuple(each)
        self._literals = tuple(sorted({x for _, _, lits in each if lits for x in lits}))
        try:
            self._loose = re.compile("|".join(f"(?:{p})" for p in loose)) if loose else None
        except re.error:  # e.g. inline global flags: no shared prefilter
            self._loose = re.compile("")

    def maybe(self, text: str) -> bool:
        """False only when no pattern can match any line of `text` (a cheap superset test)."""
        if self._loose is not None and self._loose.search(text) is not None:
            return True
        for lit in self._literals:  # noqa: SIM110 - a plain loop is faster in this hot path
            if lit in text:
                return True
        return False

    def scan(self, lines: Sequence[str]) -> list[tuple[int, str]]:
        """(index into lines, label) of each line that matches a pattern."""
        if not lines or not self.maybe("\n".join(lines)):
            return []
        out: list[tuple[int, str]] = []
        for i, line in enumerate(lines):
            for rx, label, _lits in self._each:
                if rx.search(line):
                    out.append((i, label))
                    break
        return out


@dataclass(frozen=True)
class CompiledClassifier:
    """Everything of a ClassifierConfig that is compiled once (globs, content patterns)."""

    config: ClassifierConfig
    irreversible: PathMatcher
    secrets: PathMatcher
    external: PathMatcher
    self_paths: PathMatcher
    schemas: PathMatcher
    always_d: PathMatcher
    critical: PathMatcher
    config_files: PathMatcher
    source_root: PathMatcher
    noncritical_files: PathMatcher
    any_restrictive: PathMatcher
    external_content: ContentScanner
    secret_content: ContentScanner
    self_logic: re.Pattern[str] | None


def _union(patterns: Iterable[str], flags: int = 0) -> re.Pattern[str] | None:
    pats = [p for p in patterns if p]
    if not pats:
        return None
    return re.compile("|".join(f"(?:{p})" for p in pats), flags)


@functools.lru_cache(maxsize=16)
def compile_classifier(cfg: ClassifierConfig) -> CompiledClassifier:
    """Compile a classifier config once (cached on the frozen config object)."""
    root = cfg.source_root.strip("/")
    source_root = (f"{root}/**",) if root else ()
    restrictive = (
        cfg.irreversible_globs + cfg.secret_globs + cfg.external_globs + cfg.self_paths
        + cfg.schema_globs + cfg.always_d_globs + cfg.critical_globs + cfg.config_file_globs
        + source_root
    )  # fmt: skip
    return CompiledClassifier(
        config=cfg,
        irreversible=PathMatcher(cfg.irreversible_globs),
        secrets=PathMatcher(cfg.secret_globs),
        external=PathMatcher(cfg.external_globs),
        self_paths=PathMatcher(cfg.self_paths),
        schemas=PathMatcher(cfg.schema_globs),
        always_d=PathMatcher(cfg.always_d_globs),
        critical=PathMatcher(cfg.critical_globs),
        config_files=PathMatcher(cfg.config_file_globs),
        source_root=PathMatcher(source_root),
        noncritical_files=PathMatcher(cfg.noncritical_files, restrictive=False, files_only=True),
        any_restrictive=PathMatcher(restrictive),
        external_content=ContentScanner(
            cfg.external_content_patterns, lambda i, p: "may send email, posts or webhooks"
        ),
        secret_content=ContentScanner(
            cfg.secret_content_patterns,
            lambda i, p: _SECRET_LABELS.get(p, f"a secret (pattern {i + 1})"),
        ),
        self_logic=_union((re.escape(p) for p in cfg.self_logic_patterns), re.IGNORECASE),
    )
