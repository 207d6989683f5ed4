"""Per-file axes of SPEC 2.2-2.4: irreversibility and criticality, with the reasons for each."""

from __future__ import annotations

from collections.abc import Iterable

from capdaemon.classify.carveouts import additions_only, prose_typo_fix
from capdaemon.classify.commentonly import WHAT_PASSES, comment_only_files
from capdaemon.classify.compiled import CompiledClassifier
from capdaemon.classify.hunks import ADDED, Hunk, try_parse_patch
from capdaemon.classify.structure import added_line_no, config_change, self_logic_hits
from capdaemon.config.types import PROSE_SUFFIXES
from capdaemon.globs import PathError, fold_path, is_plain_ascii, normalize_path
from capdaemon.languages import TYPO_FIX_DIRS
from capdaemon.model import (
    MODE_SUBMODULE,
    MODE_SYMLINK,
    FileChange,
    FileStatus,
    FileVerdict,
    Quadrant,
)

# Carve-out locations that are not config fields (SPEC 2.3 names them exactly; the typo-fix
# folders live with the prose file types in `languages`).
TEST_DIRS: tuple[str, ...] = ("tests/",)


# ----------------------------------------------------------------------------- helpers
def _under(path: str, dirs: Iterable[str]) -> str | None:
    """The carve-out directory a path is under (exact, case-sensitive, no folding), if any."""
    for d in dirs:
        prefix = d if d.endswith("/") else d + "/"
        if path.startswith(prefix):
            return prefix
    return None


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
        return _path_rejected(fc, exc)
    # paths checked for irreversibility: a rename deletes its old path; a copy leaves it alone
    ir_paths = (path, old) if old is not None and status is FileStatus.RENAMED else (path,)
    cr_paths = (path, old) if old is not None else (path,)
    ir = _status_reasons(fc, old)
    cr: list[str] = []
    flagged = bool(
        cc.any_restrictive.match(path) or (old is not None and cc.any_restrictive.match(old))
    )
    always_d = _always_d_reasons(cc, cr_paths if flagged else (), cr)
    ir.extend(_path_reasons(cc, ir_paths if flagged else (), cr))
    hunks = try_parse_patch(fc.patch) if status is not FileStatus.REMOVED else ()
    ir.extend(_content_reasons(fc, hunks, cc, flagged, cr_paths, cr))
    noncritical_why = _criticality(
        fc, path, old, hunks, cc, cr_paths if flagged else (), always_d, cr
    )
    return _verdict(fc, path, old, ir, cr, always_d, noncritical_why)


def _path_rejected(fc: FileChange, exc: PathError) -> FileVerdict:
    """The D verdict of a file whose path (or old path) normalize_path rejected."""
    return FileVerdict(
        path=fc.path,
        status=fc.status,
        irreversible=True,
        critical=True,
        quadrant=Quadrant.D,
        reasons=(f"critical: path rejected: {exc}", f"irreversible: path rejected: {exc}"),
        previous_path=fc.previous_path,
    )


def _status_reasons(fc: FileChange, old: str | None) -> list[str]:
    """Irreversibility from the change itself: a deletion, a rename, a mode or type change."""
    ir: list[str] = []
    if fc.status is FileStatus.REMOVED:
        ir.append("file deleted")
    elif fc.status is FileStatus.RENAMED:
        ir.append(f"rename deletes {old or 'its old path'}")
    ir.extend(_mode_reasons(fc))
    return ir


def _always_d_reasons(cc: CompiledClassifier, paths: tuple[str, ...], cr: list[str]) -> bool:
    """Add to `cr` each always-D pattern the paths match; True when any matched."""
    always_d = False
    for p in paths:
        for pat in cc.always_d.hits(p):
            always_d = True
            cr.append(f"{p} matches {pat}: always D")
    return always_d


def _path_reasons(cc: CompiledClassifier, paths: tuple[str, ...], cr: list[str]) -> list[str]:
    """Irreversibility from the restrictive path lists; a secrets path is also critical (`cr`)."""
    ir: list[str] = []
    for p in paths:
        for pat in cc.irreversible.hits(p):
            ir.append(f"database or external system ({pat})")
        for pat in cc.external.hits(p):
            ir.append(f"can send email, posts or webhooks ({pat})")
        for pat in cc.secrets.hits(p):
            ir.append(f"secrets or credentials path ({pat})")
            cr.append(f"{p} is a secrets or credentials path ({pat}): never non-critical")
        for pat in cc.schemas.hits(p):
            ir.append(f"published JSON schema ({pat})")
        for pat in cc.self_paths.hits(p):
            ir.append(f"changes what the bot trusts or runs ({pat})")
    return ir


def _verdict(
    fc: FileChange,
    path: str,
    old: str | None,
    ir: list[str],
    cr: list[str],
    always_d: bool,
    noncritical_why: str | None,
) -> FileVerdict:
    """The file's verdict from its irreversible (`ir`) and critical (`cr`) reasons."""
    if always_d and not ir:
        ir.append("CI definition or policy file: irreversible by rule")
    irreversible = bool(ir)
    critical = bool(cr) or always_d
    quadrant = Quadrant.D if always_d else Quadrant.of(irreversible, critical)
    reasons = [f"critical: {r}" for r in cr] or [f"non-critical: {noncritical_why}"]
    reasons += [f"irreversible: {r}" for r in ir] or ["reversible: revertable file edit"]
    return FileVerdict(
        path=path,
        status=fc.status,
        irreversible=irreversible,
        critical=critical,
        quadrant=quadrant,
        reasons=tuple(reasons),
        previous_path=old if old is not None else fc.previous_path,
    )


def _content_reasons(
    fc: FileChange,
    hunks: tuple[Hunk, ...] | None,
    cc: CompiledClassifier,
    flagged: bool,
    cr_paths: tuple[str, ...],
    cr: list[str],
) -> list[str]:
    """Irreversibility from the added lines: external calls, secrets, the bot's own merge and
    auth logic, and a patch that could not be read (a removed file has nothing to scan).
    A secret in the added lines also makes the file critical (added to `cr`), in any path."""
    status = fc.status
    ir: list[str] = []
    if hunks is None:
        why = "patch unavailable" if fc.patch is None else "patch unreadable"
        ir.append(f"{why}: content could not be checked for secrets or external calls")
    if hunks:
        ir += _added_line_reasons(hunks, cc, cr)
        if cc.self_logic is not None and flagged and any(cc.source_root.match(p) for p in cr_paths):
            for why in self_logic_hits(
                hunks, cc.self_logic, fc.base_content, fc.head_content, fc.path
            ):
                ir.append(f"bot merge/auth logic: {why}")
    if status is not FileStatus.REMOVED and hunks is not None and not hunks and fc.additions:
        ir.append("added content not shown in the patch")
    return ir


def _added_line_reasons(
    hunks: tuple[Hunk, ...], cc: CompiledClassifier, cr: list[str]
) -> list[str]:
    """External calls and secrets in the added lines; a secret also makes the file critical
    (added to `cr`), in any path."""
    ir: list[str] = []
    added_lines = [t for h in hunks for t in h.added_texts()]
    added_text = "\n".join(added_lines)
    if cc.external_content.maybe(added_text):
        for i, label in cc.external_content.scan(added_lines)[:1]:
            ir.append(f"added line {added_line_no(hunks, i)} {label}")
    if cc.secret_content.maybe(added_text):
        for i, label in cc.secret_content.scan(added_lines)[:3]:
            n = added_line_no(hunks, i)
            ir.append(f"added line {n} looks like {label} (value withheld)")
            cr.append(f"added line {n} looks like {label}: a leaked secret is never non-critical")
    return ir


def _criticality(
    fc: FileChange,
    path: str,
    old: str | None,
    hunks: tuple[Hunk, ...] | None,
    cc: CompiledClassifier,
    flagged_paths: tuple[str, ...],
    always_d: bool,
    cr: list[str],
) -> str | None:
    """Add the critical reasons to `cr`; the non-critical carve-out that applies, if any.
    `flagged_paths` are the paths (new and old) when any restrictive list may match them."""
    status = fc.status
    critical_hits = _critical_hits(fc, path, hunks, cc, flagged_paths)
    noncritical_why: str | None = None
    if always_d:
        pass
    elif critical_hits:
        noncritical_why, typo_why_not = _doctrine_typo(fc, path, old, hunks, cc)
        if noncritical_why is None:
            cr.extend(critical_hits)
            if typo_why_not:
                cr.append(f"not a typo fix ({typo_why_not}): a rule change")
    else:
        is_config = [p for p in flagged_paths if cc.config_files.match(p)]
        if is_config:
            _, why = config_change(path, fc.base_content, fc.head_content)
            if status is not FileStatus.MODIFIED or old is not None:
                why = f"config file {status.value}: schema change assumed"
            # A values-only change is reported as such but is not on the non-critical list
            # (SPEC 2.3: anything not proven non-critical is critical), so it stays critical.
            cr.append(f"{path}: {why}")
        else:
            noncritical_why, why_not = _carve_out(fc, path, old, hunks, cc)
            if noncritical_why is None:
                cr.append(why_not)
    return noncritical_why


def _critical_hits(
    fc: FileChange,
    path: str,
    hunks: tuple[Hunk, ...] | None,
    cc: CompiledClassifier,
    flagged_paths: tuple[str, ...],
) -> list[str]:
    """Why the file is critical by its paths (critical lists, published schemas, the bot's own
    files) or, for a symlink, by its target; [] when nothing makes it so."""
    hits: list[str] = []
    for p in flagged_paths:
        hits.extend(f"{p} matches {pat}" for pat in cc.critical.hits(p))
        hits.extend(f"{p} is a published schema ({pat})" for pat in cc.schemas.hits(p))
        hits.extend(
            f"{p} changes what the bot trusts or runs ({pat})" for pat in cc.self_paths.hits(p)
        )
    if fc.new_mode == MODE_SYMLINK and fc.status is not FileStatus.REMOVED:
        hits.extend(_symlink_target_hits(path, hunks, cc))
    return hits


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
    fc: FileChange,
    path: str,
    old: str | None,
    hunks: tuple[Hunk, ...] | None,
    cc: CompiledClassifier,
) -> tuple[str | None, str]:
    """The docs/concepts typo carve-out, the only one that beats the critical list (prose
    files only: `languages.is_prose`).

    Returns (why non-critical, "") when it applies, else (None, why not — "" when the
    file is not a doctrine document at all).
    """
    status = fc.status
    if _name_refusal(path, TYPO_FIX_DIRS) or _under(path, TYPO_FIX_DIRS) is None:
        return None, ""
    if status is not FileStatus.MODIFIED or old is not None:
        return None, f"file {status.value}"
    folded_dirs = tuple(d.casefold() for d in TYPO_FIX_DIRS)
    other = [pat for pat in cc.critical.hits(path) if not pat.casefold().startswith(folded_dirs)]
    if other or cc.schemas.match(path) or cc.self_paths.match(path) or cc.config_files.match(path):
        return None, "also on another critical list"
    texts = (fc.base_content, fc.head_content)
    carve = prose_typo_fix(path, hunks, texts, extra_words=cc.config.typo_words)
    if carve:
        return f"{carve.why} in {_under(path, TYPO_FIX_DIRS)}", ""
    return None, carve.why


def _carve_out(
    fc: FileChange,
    path: str,
    old: str | None,
    hunks: tuple[Hunk, ...] | None,
    cc: CompiledClassifier,
) -> tuple[str | None, str]:
    """(why non-critical, None) or (None, why critical) for a path on no critical list."""
    status = fc.status
    paths = (path, old) if old is not None and status is FileStatus.RENAMED else (path,)
    for p in paths:
        dirs = (*cc.config.noncritical_dirs, *cc.config.noncritical_prose_dirs, *TEST_DIRS)
        refusal = _name_refusal(p, dirs)
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
            carve = additions_only(hunks)
            if carve:
                return f"adds test lines only under {_under(path, TEST_DIRS)}", ""
            return None, f"{path}: changes existing test lines ({carve.why})"
    if old is None and status is FileStatus.MODIFIED:
        carve = comment_only_files(path, fc.base_content, fc.head_content)
        if carve:
            return f"comment-only change: {carve.why}", ""
        return None, f"{path}: not proven non-critical ({carve.why}); {_what_passes(cc)}"
    return None, f"{path}: not proven non-critical; {_what_passes(cc)}"


def _what_passes(cc: CompiledClassifier) -> str:
    """What would have been non-critical, for a refusal's reason text."""
    dirs = ", ".join(cc.config.noncritical_dirs) or "none"
    files = ", ".join(cc.config.noncritical_files) or "none"
    prose = ", ".join(cc.config.noncritical_prose_dirs) or "none"
    return (
        f"what passes: files under {dirs}; files named {files}; prose documents "
        f"({' '.join(PROSE_SUFFIXES)}) under {prose}; new files or added lines "
        f"under {', '.join(TEST_DIRS)}; {WHAT_PASSES}; prose in a document is not a comment"
    )


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
    d = _under(path, cc.config.noncritical_prose_dirs)
    if d is not None and path.endswith(PROSE_SUFFIXES):
        return f"prose document under {d}"
    return None
