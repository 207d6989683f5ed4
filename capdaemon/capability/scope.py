"""Pure scope checks of paths, file changes (renames, symlinks), commands, expiry and binding.

Nothing here reads the clock or the file system: `now` is an argument, and symlinks met on
disk are resolved by the caller (see capdaemon.capability.fspaths) before the check.
"""

from __future__ import annotations

import posixpath

from capdaemon.capability.cmdline import CommandParseError, split_line, verbatim_allows
from capdaemon.capability.cmdpattern import PatternError, is_pattern, match_pattern, parse_pattern
from capdaemon.capability.cmdtables import findings
from capdaemon.capability.model import (
    HOOK_FOLDERS,
    Capability,
    CapabilitySnapshot,
    Violation,
    ViolationKind,
)
from capdaemon.globs import GlobError, PathError, fold_path, normalize_path
from capdaemon.quoting import quote_value

TYPE_CHECKING = False  # typing (~2 ms) and capdaemon.model (~10 ms) stay out of scope-guard
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from datetime import datetime

    from capdaemon.model import FileChange

    # (word, kind) -> violations; kind is "read", "write" or "rev-or-read" (cmdopts)
    PathCheck = Callable[[str, str], list[Violation]]

_MODE_SYMLINK = "120000"  # capdaemon.model.MODE_SYMLINK
_REMOVED = "removed"  # capdaemon.model.FileStatus.REMOVED (a StrEnum: compares equal)

_PROBE = ".capdaemon-probe"  # a child name used to test whether a folder is under a forbidden glob


def _iso(dt: datetime) -> str:
    return dt.isoformat().replace("+00:00", "Z")


def expiry_violation(snapshot: CapabilitySnapshot, now: datetime) -> Violation | None:
    """A violation when the capability has expired at `now`, else None."""
    if snapshot.is_expired(now):
        return Violation(
            ViolationKind.EXPIRED,
            snapshot.task_id,
            f"capability expired at {_iso(snapshot.expires_at)} "
            f"(ttl {snapshot.capability.ttl_hours}h)",
        )
    return None


def check_path(cap: Capability, path: str) -> Violation | None:
    """Check one repository-relative path: normalised, forbidden wins, then the allow-list.

    Forbidden globs match case-insensitively and look-alike-folded; allowed globs match
    exactly as written. A legacy capability allows every valid path.
    """
    try:
        norm = normalize_path(path)
    except PathError as exc:
        return Violation(ViolationKind.INVALID_PATH, path, str(exc))
    parts = norm.lower().split("/") if norm.isascii() else map(fold_path, norm.split("/"))
    if ".git" in parts:  # (ASCII: folding a part is lower-casing it)
        return Violation(ViolationKind.FORBIDDEN, norm, "inside a .git folder")
    if not cap.hooks_writable and fold_path(norm.split("/", 1)[0]) in HOOK_FOLDERS:
        return Violation(
            ViolationKind.FORBIDDEN,
            norm,
            "a git hooks folder (the next commit runs what is there); the task may write it "
            "only with `hooks_writable: true`",
        )
    if cap.legacy:
        return None
    if cap.forbidden.match(norm):
        pats = cap.forbidden.matching(norm)
        pat = pats[0] if pats else None
        return Violation(
            ViolationKind.FORBIDDEN,
            norm,
            f"forbidden by {pat!r} (forbidden wins over allowed)",
            pat,
        )
    if not cap.allowed.match(norm):
        return Violation(
            ViolationKind.NOT_ALLOWED, norm, "outside allowed paths " + ", ".join(cap.paths)
        )
    return None


def check_paths(
    snapshot: CapabilitySnapshot, paths: Iterable[str], now: datetime
) -> list[Violation]:
    """Violations for repository-relative paths (an expired capability is a violation too)."""
    out: list[Violation] = []
    exp = expiry_violation(snapshot, now)
    if exp is not None:
        out.append(exp)
    seen: set[str] = set()
    for p in paths:
        if p in seen:
            continue
        seen.add(p)
        v = check_path(snapshot.capability, p)
        if v is not None:
            out.append(v)
    return out


def symlink_target(link_path: str, target: str) -> str:
    """The repository-relative path a symlink at `link_path` with text `target` points to.

    Raises PathError for absolute targets and targets that climb out of the repository.
    """
    if target.startswith("/"):
        raise PathError(f"absolute target {target!r}")
    folder = posixpath.dirname(normalize_path(link_path))
    return normalize_path(posixpath.join(folder, target) if folder else target)


def check_symlink(cap: Capability, link_path: str, target: str | None) -> Violation | None:
    """A symlink is in scope only when its target is a valid, allowed, non-forbidden path.

    A target folder under a forbidden glob (`.github` with `.github/**`) is forbidden too.
    """
    if target is None:
        return Violation(
            ViolationKind.SYMLINK_TARGET, link_path, "symlink target could not be read"
        )
    try:
        real = symlink_target(link_path, target)
    except PathError as exc:
        return Violation(
            ViolationKind.SYMLINK_TARGET, link_path, f"symlink points outside the repository: {exc}"
        )
    if cap.legacy:
        return None
    for probe in (real, f"{real}/{_PROBE}"):
        v = check_path(cap, probe)
        if v is not None and v.kind is ViolationKind.FORBIDDEN:
            return Violation(
                ViolationKind.SYMLINK_TARGET,
                link_path,
                f"symlink points at {real!r}, which is forbidden ({v.reason})",
                v.pattern,
            )
    v = check_path(cap, real)
    if v is not None:
        return Violation(
            ViolationKind.SYMLINK_TARGET, link_path, f"symlink points at {real!r}: {v.reason}"
        )
    return None


def change_paths(change: FileChange) -> list[str]:
    """Every path a change touches: both sides of renames and copies."""
    paths = [change.path]
    if change.previous_path and change.previous_path != change.path:
        paths.insert(0, change.previous_path)
    return paths


def check_file_changes(
    snapshot: CapabilitySnapshot, changes: Sequence[FileChange], now: datetime
) -> list[Violation]:
    """Violations for a branch's changes: every path of every change, and symlink targets.

    A symlink added or changed (new mode 120000) must have its target (the blob text,
    `head_content`, resolved against the link's folder) in scope; a missing text fails closed.
    """
    out: list[Violation] = []
    exp = expiry_violation(snapshot, now)
    if exp is not None:
        out.append(exp)
    cap = snapshot.capability
    seen: set[tuple[str, ViolationKind]] = set()

    def add(v: Violation | None) -> None:
        if v is not None and (v.subject, v.kind) not in seen:
            seen.add((v.subject, v.kind))
            out.append(v)

    for ch in changes:
        for p in change_paths(ch):
            add(check_path(cap, p))
        if ch.new_mode == _MODE_SYMLINK and ch.status != _REMOVED:
            add(check_symlink(cap, ch.path, ch.head_content))
    return out


def _listed(items: tuple[str, ...]) -> str:
    return "[" + ", ".join(items) + "]"


def check_binding(cap: Capability, author: str | None, head_ref: str | None) -> list[Violation]:
    """Violations when a PR's author or head branch may not use the capability.

    `agents` (when given) must contain the author, compared case-insensitively (ASCII only:
    a non-ASCII login never matches, so U+212A KELVIN SIGN is not `k`). `branches` (when given)
    must match the head branch name, gitignore-style and case-sensitively, with no look-alike
    folding. Fail closed: with a bound task an unknown (None/empty) author or head branch, or
    a head branch that is not a plain relative name (`..`, `//`, leading `/`, control
    characters), is a violation. An unbound or legacy capability binds nobody: no violations.
    """
    out: list[Violation] = []
    if cap.legacy:
        return out
    task = cap.task_id
    if cap.agents:
        who = author or ""
        known = who.isascii() and who.lower() in cap.agents
        if not known:
            shown = who if who else "unknown"
            out.append(
                Violation(
                    ViolationKind.BINDING,
                    task,
                    f"task {task} is bound to agents {_listed(cap.agents)}; PR author {shown}",
                )
            )
    if cap.branches:
        ref = head_ref or ""
        bound = f"task {task} is bound to branches {_listed(cap.branches)}"
        reason = ""
        if not ref:
            reason = f"{bound}; PR head branch unknown"
        else:
            try:
                plain = normalize_path(ref) == ref
            except PathError:
                plain = False
            if not plain:
                reason = f"{bound}; PR head branch {ref!r} is not a plain branch name"
            else:
                try:
                    ok = cap.branch_globs.match(ref)
                except GlobError as exc:  # a stored glob pathspec refuses: fail closed
                    ok, bound = False, f"{bound} (unusable: {exc})"
                if not ok:
                    reason = f"{bound}; PR head branch {ref}"
        if reason:
            out.append(Violation(ViolationKind.BINDING, task, reason))
    return out


def check_command(
    snapshot: CapabilitySnapshot,
    line: str,
    now: datetime,
    *,
    paths: PathCheck | None = None,
) -> list[Violation]:
    """Check one command line; return its violations (none: the line may run).

    A line is accepted when it is exactly an allow-list entry, or when it is simple
    commands of plain words (capdaemon.capability.cmdline) each matching an entry: a typed
    pattern as a whole (capdaemon.capability.cmdpattern), or a program and leading arguments
    whose further words pass the program's option table (capdaemon.capability.cmdtables):
    no refused option, and every word that names a path in scope, or for a path the program
    only reads, an existing non-forbidden file of the repository. `paths(word, kind)` checks
    such a word on disk against the repository root (scope-guard passes
    capdaemon.capability.fspaths.word_checker); without it the check is lexical: absolute
    paths are refused and a read path need only not be forbidden. Expansions, escapes,
    quoting of anything but plain words, assignments and redirections are refused, whatever
    the capability, naming the character or word refused.
    """
    out: list[Violation] = []
    exp = expiry_violation(snapshot, now)
    if exp is not None:
        out.append(exp)
    cap = snapshot.capability
    if not cap.legacy and cap.commands and verbatim_allows(cap.commands, line):
        return out
    try:
        commands = split_line(line)
    except CommandParseError as exc:
        out.append(Violation(ViolationKind.UNPARSEABLE, quote_value(line), f"refused: {exc}"))
        return out
    if not cap.legacy and cap.commands:
        check = paths if paths is not None else (lambda w, k: lexical_word_check(cap, w, k))
        for argv in commands:
            out.extend(_check_argv(cap, argv, check))
    return out


def _check_argv(cap: Capability, argv: tuple[str, ...], paths: PathCheck) -> list[Violation]:
    """No violation when some entry allows `argv`; else those of the longest entry that
    starts it, or "not allowed"."""
    shown = " ".join(argv)
    best: tuple[int, list[Violation]] | None = None
    for entry in cap.commands:
        if is_pattern(entry):
            try:
                matched = match_pattern(parse_pattern(entry), argv)
            except PatternError:
                continue
            if matched is None:
                continue
            found, size = [(i, k, w, "") for i, k, w in matched], len(argv)
        else:
            try:
                (want,) = split_line(entry)
            except (CommandParseError, ValueError):
                continue
            if argv[: len(want)] != want:
                continue
            found, size = findings(argv, len(want)), len(want)
        vs = _judge(shown, found, paths)
        if not vs:
            return []
        if best is None or size > best[0]:
            best = (size, vs)
    if best is not None:
        return best[1]
    return [
        Violation(
            ViolationKind.COMMAND,
            shown,
            f"command {argv[0]!r} with these arguments is not allowed "
            f"(allowed: {'; '.join(cap.commands)})",
        )
    ]


def _judge(shown: str, found: list[tuple[int, str, str, str]], paths: PathCheck) -> list[Violation]:
    out: list[Violation] = []
    for _i, kind, word, why in found:
        if kind == "refuse":
            out.append(Violation(ViolationKind.COMMAND, shown, f"{word!r}: {why}"))
            continue
        for v in paths(word, kind):
            what = "writes" if kind == "write" else "reads"
            out.append(Violation(v.kind, v.subject, f"{shown!r} {what} it: {v.reason}", v.pattern))
    return out


def looks_like_path(word: str) -> bool:
    """True when a git word cannot be a revision, so it is a path: absolute, or a component
    that starts with `.` (`../x`, `.github/x`; no ref name has one)."""
    return word.startswith("/") or any(c.startswith(".") for c in word.split("/"))


def lexical_word_check(cap: Capability, word: str, kind: str) -> list[Violation]:
    """A path word of a command checked without the disk: relative, normalised, in scope
    to be written, not forbidden to be read; a git word without `/` that does not look like
    a path is a revision."""
    if kind == "rev-or-read":
        if "/" not in word and not looks_like_path(word):
            return []
        kind = "read"
    if word.startswith("/"):
        return [Violation(ViolationKind.OUTSIDE_REPO, word,
                          "an absolute path cannot be placed in the repository here")]  # fmt: skip
    try:
        norm = normalize_path(word)
    except PathError as exc:
        if kind == "read" and word.rstrip("/") in (".", "./"):
            return []  # the repository root, read (its forbidden parts are the program's)
        return [Violation(ViolationKind.INVALID_PATH, word, str(exc))]
    v = check_path(cap, norm)
    if v is None or (kind == "read" and v.kind is ViolationKind.NOT_ALLOWED):
        return []
    return [v]
