"""Per-file axes of SPEC 2.2-2.4: irreversibility and criticality, with the reasons for each."""

from __future__ import annotations

import functools
import json
import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from capdaemon.classify import carveouts
from capdaemon.classify.hunks import ADDED, REMOVED, Hunk, try_parse_patch
from capdaemon.classify.literals import required_literals
from capdaemon.config import ClassifierConfig
from capdaemon.globs import PathError, compile_glob, fold_path, is_plain_ascii, normalize_path
from capdaemon.model import (
    MODE_SUBMODULE,
    MODE_SYMLINK,
    FileChange,
    FileStatus,
    FileVerdict,
    Quadrant,
)

# Carve-out locations that are not config fields (SPEC 2.3 names them exactly).
TYPO_FIX_DIRS: tuple[str, ...] = ("docs/concepts/",)
TEST_DIRS: tuple[str, ...] = ("tests/",)
MAX_CONFIG_BYTES = 1_000_000
_SHAPE_BUDGET = 200_000
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

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

# A definition line in most languages: Python/Ruby def/class, JS function, Go func, Rust fn …
_DEF_LINE = re.compile(
    r"^(?P<indent>[ \t]*)(?:@\S+[ \t]+)*"
    r"(?:(?:export|public|private|protected|internal|static|async|override|final|abstract|"
    r"default|pub(?:\([^)]*\))?|unsafe|extern|inline|virtual)[ \t]+)*"
    r"(?:def|class|func|function|fn|sub|interface|struct|impl|trait|module|object)\b"
    r"[ \t]*(?P<name>[\w$.:<>]*)"
)


# ----------------------------------------------------------------------------- matchers
class PathMatcher:
    """A precompiled gitignore-style glob list: one union regex, per-pattern regexes for reasons.

    `restrictive` matchers compare case-insensitively and also try the look-alike-folded form
    (like GlobSet); carve-out matchers (`restrictive=False`) are exact and ASCII-only callers.
    """

    __slots__ = ("_each", "_union", "patterns", "restrictive")

    def __init__(self, patterns: Iterable[str], *, restrictive: bool = True) -> None:
        self.patterns = tuple(patterns)
        self.restrictive = restrictive
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
            if pat not in out and any(rx.match(f) for f in forms):
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
        noncritical_files=PathMatcher(cfg.noncritical_files, restrictive=False),
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


# ----------------------------------------------------------------------------- helpers
def _under(path: str, dirs: Iterable[str]) -> str | None:
    """The carve-out directory a path is under (exact, case-sensitive, no folding), if any."""
    for d in dirs:
        prefix = d if d.endswith("/") else d + "/"
        if path.startswith(prefix):
            return prefix
    return None


def _shape(value: Any, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError("config file too deep or too large to compare")
    if isinstance(value, dict):
        return ("map", frozenset((str(k), _shape(v, budget)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("list", frozenset(_shape(v, budget) for v in value))
    return type(value).__name__


def _parse_config(path: str, text: str) -> Any:
    low = path.casefold()
    if low.endswith((".yml", ".yaml")):
        return yaml.load(text, Loader=_YAML_LOADER)
    if low.endswith(".json"):
        return json.loads(text)
    if low.endswith(".toml"):
        return tomllib.loads(text)
    raise ValueError("unknown config format")


def config_change(path: str, base: str | None, head: str | None) -> tuple[bool, str]:
    """(schema_changed, reason) for a config file, from its base and head contents.

    Keys added or removed and value types changed are a schema change; anything that cannot
    be compared (content unavailable, unparseable, too large) counts as a schema change.
    """
    if base is None or head is None:
        return True, "config file content unavailable: schema change assumed"
    if len(base) > MAX_CONFIG_BYTES or len(head) > MAX_CONFIG_BYTES:
        return True, "config file too large to compare: schema change assumed"
    try:
        old = _parse_config(path, base)
        new = _parse_config(path, head)
        old_shape = _shape(old, [_SHAPE_BUDGET])
        new_shape = _shape(new, [_SHAPE_BUDGET])
    except RecursionError:
        return True, "config file nested too deeply: schema change assumed"
    except Exception as exc:  # yaml/json/toml errors and our own budget
        return True, f"config file not comparable ({type(exc).__name__}): schema change assumed"
    if old_shape != new_shape:
        return True, "config schema changed (keys added/removed or value types changed)"
    return False, "config values changed (schema unchanged)"


def _scopes_by_line(content: str | None) -> list[tuple[str, ...]] | None:
    """For each line (1-based index - 1) the names of the definitions enclosing it."""
    if content is None:
        return None
    stack: list[tuple[int, str]] = []
    out: list[tuple[str, ...]] = []
    for line in content.splitlines():
        stripped = line.strip()
        if stripped:
            indent = len(line) - len(line.lstrip(" \t"))
            m = _DEF_LINE.match(line)
            # a definition or any code line at or left of a scope's indentation closes it
            while stack and indent <= stack[-1][0] and not stripped.startswith(("#", ")", "]")):
                stack.pop()
            if m is not None:
                stack.append((indent, m.group("name") or stripped))
        out.append(tuple(name for _, name in stack))
    return out


def self_logic_hits(
    hunks: tuple[Hunk, ...], rx: re.Pattern[str], base: str | None, head: str | None
) -> list[str]:
    """Reasons why hunks of a bot-source file touch merge/auth logic (empty when they do not)."""
    reasons: list[str] = []
    if (
        head is None
        and base is None
        and not any(rx.search(h.header) or rx.search("\n".join(h.raw)) for h in hunks)
    ):
        return reasons  # nothing in the hunks mentions merge/auth, and no content to look up
    head_scopes = _scopes_by_line(head)
    base_scopes = _scopes_by_line(base)
    for h in hunks:
        header_def = _DEF_LINE.match(h.header.strip()) if h.header.strip() else None
        stack: list[tuple[int | None, str]] = []
        if h.header.strip() and (header_def is not None or rx.search(h.header)):
            name = header_def.group("name") if header_def is not None else ""
            stack.append((None, name or h.header.strip()))
        min_indent: int | None = None
        for ln in h.lines:
            text = ln.text
            stripped = text.strip()
            if not stripped:
                continue
            indent = len(text) - len(text.lstrip(" \t"))
            m = _DEF_LINE.match(text)
            if m is not None:
                while stack and (
                    (stack[-1][0] is not None and indent <= stack[-1][0])
                    or (stack[-1][0] is None and min_indent is not None and indent < min_indent)
                ):
                    stack.pop()
            if ln.kind in (ADDED, REMOVED):
                n = ln.new_no if ln.kind == ADDED else ln.old_no
                scopes = [name for _, name in stack]
                by_content = head_scopes if ln.kind == ADDED else base_scopes
                if by_content is not None and 0 < n <= len(by_content):
                    scopes.extend(by_content[n - 1])
                hit = rx.search(stripped)
                if hit is not None:
                    reasons.append(f"line {n} changes code mentioning {hit.group(0)!r}")
                    return reasons
                for name in scopes:
                    hit = rx.search(name)
                    if hit is not None:
                        reasons.append(f"line {n} is inside {name.split('(')[0]!r}")
                        return reasons
            if m is not None:
                stack.append((indent, m.group("name") or stripped))
            min_indent = indent if min_indent is None else min(min_indent, indent)
    return reasons


def _added_line_no(hunks: tuple[Hunk, ...], index: int) -> int:
    """The new-file line number of the index-th added line."""
    for h in hunks:
        for ln in h.lines:
            if ln.kind == ADDED:
                if index == 0:
                    return ln.new_no
                index -= 1
    return 0


def _normalize(path: str) -> str:
    """normalize_path, with a fast path for plain-ASCII paths it would return unchanged."""
    if isinstance(path, str) and is_plain_ascii(path) and not path.startswith("/"):
        wrapped = f"/{path}/"
        plain = "//" not in wrapped and "/./" not in wrapped and "/../" not in wrapped
        if plain and not (len(path) > 1 and path[1] == ":"):
            return path
    return normalize_path(path)


def _mode_reasons(fc: FileChange) -> list[str]:
    reasons: list[str] = []
    modes = {fc.old_mode, fc.new_mode}
    if MODE_SUBMODULE in modes:
        reasons.append("submodule pointer change")
    if MODE_SYMLINK in modes:
        reasons.append("symlink change")
    if fc.old_mode and fc.new_mode and fc.old_mode != fc.new_mode:
        reasons.append(f"file mode change {fc.old_mode} -> {fc.new_mode}")
    if fc.status is FileStatus.CHANGED and not reasons:
        reasons.append("file type or mode change")
    return reasons


# ----------------------------------------------------------------------------- the axes
def classify_file(fc: FileChange, cc: CompiledClassifier) -> FileVerdict:
    """Irreversibility and criticality of one changed file, with reasons (fail closed)."""
    try:
        return _classify_file(fc, cc)
    except Exception as exc:  # a bug here must never let a file through
        return fail_closed(
            fc,
            f"critical: internal error while classifying ({type(exc).__name__})",
            "irreversible: internal error (fail closed)",
        )


def fail_closed(fc: FileChange, critical: str, irreversible: str) -> FileVerdict:
    """A file judged critical and irreversible (D) without being classified, with both reasons."""
    return FileVerdict(
        path=fc.path if isinstance(fc.path, str) else repr(fc.path),
        status=fc.status,
        irreversible=True,
        critical=True,
        quadrant=Quadrant.D,
        reasons=(critical, irreversible),
        previous_path=fc.previous_path,
    )


def _classify_file(fc: FileChange, cc: CompiledClassifier) -> FileVerdict:
    status = fc.status
    moved = status in (FileStatus.RENAMED, FileStatus.COPIED) and bool(fc.previous_path)
    try:
        path = _normalize(fc.path)
        old = _normalize(fc.previous_path) if moved and fc.previous_path else None
    except PathError as exc:
        return FileVerdict(
            path=fc.path,
            status=status,
            irreversible=True,
            critical=True,
            quadrant=Quadrant.D,
            reasons=(f"critical: path rejected: {exc}", f"irreversible: path rejected: {exc}"),
            previous_path=fc.previous_path,
        )
    ir: list[str] = []
    cr: list[str] = []
    # paths checked for irreversibility: a rename deletes its old path; a copy leaves it alone
    ir_paths = (path, old) if old is not None and status is FileStatus.RENAMED else (path,)
    cr_paths = (path, old) if old is not None else (path,)

    if status is FileStatus.REMOVED:
        ir.append("file deleted")
    elif status is FileStatus.RENAMED:
        ir.append(f"rename deletes {old or 'its old path'}")
    ir.extend(_mode_reasons(fc))

    flagged = cc.any_restrictive.match(path) or (old is not None and cc.any_restrictive.match(old))
    always_d = False
    for p in cr_paths if flagged else ():
        for pat in cc.always_d.hits(p):
            always_d = True
            cr.append(f"{p} matches {pat}: always D")
    for p in ir_paths if flagged else ():
        for pat in cc.irreversible.hits(p):
            ir.append(f"database or external system ({pat})")
        for pat in cc.external.hits(p):
            ir.append(f"can send email, posts or webhooks ({pat})")
        for pat in cc.secrets.hits(p):
            ir.append(f"secrets or credentials path ({pat})")
        for pat in cc.schemas.hits(p):
            ir.append(f"published JSON schema ({pat})")
        for pat in cc.self_paths.hits(p):
            ir.append(f"changes what the bot trusts or runs ({pat})")

    # a removed file adds nothing to scan, and no carve-out reads its patch
    hunks = try_parse_patch(fc.patch) if status is not FileStatus.REMOVED else ()
    if hunks is None:
        why = "patch unavailable" if fc.patch is None else "patch unreadable"
        ir.append(f"{why}: content could not be checked for secrets or external calls")
    if hunks:
        added_lines = [t for h in hunks for t in h.added_texts()]
        added_text = "\n".join(added_lines)
        scan_external = cc.external_content.maybe(added_text)
        scan_secrets = cc.secret_content.maybe(added_text)
        if scan_external or scan_secrets:
            for i, label in cc.external_content.scan(added_lines)[:1] if scan_external else ():
                ir.append(f"added line {_added_line_no(hunks, i)} {label}")
            for i, label in cc.secret_content.scan(added_lines)[:3] if scan_secrets else ():
                n = _added_line_no(hunks, i)
                ir.append(f"added line {n} looks like {label} (value withheld)")
        if cc.self_logic is not None and flagged and any(cc.source_root.match(p) for p in cr_paths):
            for why in self_logic_hits(hunks, cc.self_logic, fc.base_content, fc.head_content):
                ir.append(f"bot merge/auth logic: {why}")
    if status is not FileStatus.REMOVED and hunks is not None and not hunks and fc.additions:
        ir.append("added content not shown in the patch")

    # ---- criticality
    critical_hits: list[str] = []
    for p in cr_paths if flagged else ():
        critical_hits.extend(f"{p} matches {pat}" for pat in cc.critical.hits(p))
        critical_hits.extend(f"{p} is a published schema ({pat})" for pat in cc.schemas.hits(p))
        critical_hits.extend(
            f"{p} changes what the bot trusts or runs ({pat})" for pat in cc.self_paths.hits(p)
        )
    if fc.new_mode == MODE_SYMLINK and status is not FileStatus.REMOVED:
        critical_hits.extend(_symlink_target_hits(path, hunks, cc))
    noncritical_why: str | None = None
    if always_d:
        pass
    elif critical_hits:
        noncritical_why, typo_why_not = _doctrine_typo(path, old, status, hunks, cc)
        if noncritical_why is None:
            cr.extend(critical_hits)
            if typo_why_not:
                cr.append(f"not a typo fix ({typo_why_not}): a rule change")
    else:
        is_config = [p for p in cr_paths if flagged and cc.config_files.match(p)]
        if is_config:
            _, why = config_change(path, fc.base_content, fc.head_content)
            if status is not FileStatus.MODIFIED or old is not None:
                why = f"config file {status.value}: schema change assumed"
            # A values-only change is reported as such but is not on the non-critical list
            # (SPEC 2.3: anything not proven non-critical is critical), so it stays critical.
            cr.append(f"{path}: {why}")
        else:
            noncritical_why, why_not = _carve_out(path, old, status, hunks, cc)
            if noncritical_why is None:
                cr.append(why_not)

    if always_d and not ir:
        ir.append("CI definition or policy file: irreversible by rule")
    irreversible = bool(ir)
    critical = bool(cr) or always_d
    quadrant = Quadrant.D if always_d else Quadrant.of(irreversible, critical)
    reasons = [f"critical: {r}" for r in cr] or [f"non-critical: {noncritical_why}"]
    reasons += [f"irreversible: {r}" for r in ir] or ["reversible: revertable file edit"]
    return FileVerdict(
        path=path,
        status=status,
        irreversible=irreversible,
        critical=critical,
        quadrant=quadrant,
        reasons=tuple(reasons),
        previous_path=old if old is not None else fc.previous_path,
    )


def _symlink_target_hits(
    path: str, hunks: tuple[Hunk, ...] | None, cc: CompiledClassifier
) -> list[str]:
    """Why a symlink's target makes it critical: unreadable, escaping, or into a critical path."""
    targets = [ln.text for h in hunks or () for ln in h.lines if ln.kind == ADDED]
    if len(targets) != 1:
        return [f"{path} is a symlink whose target cannot be read"]
    target = targets[0].strip()
    if target.startswith("/"):
        return [f"{path} is a symlink to an absolute path"]
    parent = path.rsplit("/", 1)[0] if "/" in path else ""
    try:
        resolved = normalize_path(f"{parent}/{target}" if parent else target)
    except PathError:
        return [f"{path} is a symlink that points outside the repository"]
    hits = (
        cc.always_d.hits(resolved)
        + cc.critical.hits(resolved)
        + cc.schemas.hits(resolved)
        + cc.self_paths.hits(resolved)
        + cc.secrets.hits(resolved)
    )
    if hits:
        return [f"{path} is a symlink into {resolved} ({hits[0]})"]
    return []


def _doctrine_typo(
    path: str,
    old: str | None,
    status: FileStatus,
    hunks: tuple[Hunk, ...] | None,
    cc: CompiledClassifier,
) -> tuple[str | None, str]:
    """The docs/concepts typo carve-out, the only one that beats the critical list.

    Returns (why non-critical, "") when it applies, else (None, why not — "" when the
    file is not a doctrine document at all).
    """
    if _name_refusal(path, TYPO_FIX_DIRS) or _under(path, TYPO_FIX_DIRS) is None:
        return None, ""
    if status is not FileStatus.MODIFIED or old is not None:
        return None, f"file {status.value}"
    folded_dirs = tuple(d.casefold() for d in TYPO_FIX_DIRS)
    other = [pat for pat in cc.critical.hits(path) if not pat.casefold().startswith(folded_dirs)]
    if other or cc.schemas.match(path) or cc.self_paths.match(path) or cc.config_files.match(path):
        return None, "also on another critical list"
    carve = carveouts.typo_fix(hunks)
    if carve:
        return f"{carve.why} in {_under(path, TYPO_FIX_DIRS)}", ""
    return None, carve.why


def _carve_out(
    path: str,
    old: str | None,
    status: FileStatus,
    hunks: tuple[Hunk, ...] | None,
    cc: CompiledClassifier,
) -> tuple[str | None, str]:
    """(why non-critical, None) or (None, why critical) for a path on no critical list."""
    paths = (path, old) if old is not None and status is FileStatus.RENAMED else (path,)
    for p in paths:
        refusal = _name_refusal(p, (*cc.config.noncritical_dirs, *TEST_DIRS))
        if refusal:
            return None, refusal
    whys: list[str] = []
    for p in paths:
        why = _path_carve_out(p, cc)
        if why is None:
            break
        whys.append(why)
    else:
        return "; ".join(whys), ""
    if old is None and _under(path, TEST_DIRS):
        if status in (FileStatus.ADDED, FileStatus.COPIED):
            return f"new file under {_under(path, TEST_DIRS)}", ""
        if status is FileStatus.MODIFIED:
            carve = carveouts.additions_only(hunks)
            if carve:
                return f"adds test lines only under {_under(path, TEST_DIRS)}", ""
            return None, f"{path}: changes existing test lines ({carve.why})"
    if old is None and status is FileStatus.MODIFIED:
        carve = carveouts.comment_only(path, hunks)
        if carve:
            return "comment-only change", ""
        return None, f"{path}: not proven non-critical ({carve.why})"
    return None, f"{path}: not proven non-critical"


def _name_refusal(path: str, dirs: Iterable[str]) -> str:
    """Why a non-ASCII path cannot use a carve-out ("" when it is judged like an ASCII one).

    The path is already NFC (normalize_path). Names with control or format characters
    (bidi overrides, zero-width marks) are refused; so is a folder that only looks like a
    carve-out folder once look-alikes are folded (`ｅxamples/`, Cyrillic `ехamples/`).
    """
    if is_plain_ascii(path):
        return ""
    if not path.isprintable():
        return f"{path!r} has control or format characters: not proven non-critical"
    folder = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
    if folder.isascii() or _under(path, dirs) is not None:
        return ""
    folded = fold_path(folder)
    for d in dirs:
        prefix = (d if d.endswith("/") else d + "/").casefold()
        if folded.startswith(prefix):
            return f"{path}: folder looks like {d} but is not: not proven non-critical"
    return ""


def _path_carve_out(path: str, cc: CompiledClassifier) -> str | None:
    """The path-only carve-outs: carve-out directories and files (README*, CHANGELOG.md)."""
    d = _under(path, cc.config.noncritical_dirs)
    if d is not None:
        return f"under {d}"
    hits = cc.noncritical_files.hits(path)
    if hits:
        return f"{hits[0]} file"
    return None
