"""finish-task's QC step: run the task's QC commands, each first checked like scope-guard does.

A QC command runs only if the capability's command allow-list admits it (the scope guard's
own check: every simple command of the line, no substitutions, no dangerous assignments) and
it writes into no file; a capability without a command allow-list admits no QC command (fail
closed). Commands run in order with bash in the task's work tree, bounded by a timeout; the
first failure stops the rest.

What a QC command runs is the agent's code (its tests, its scripts), so each runs in the
sandbox `scope-guard run` uses (`capdaemon.jail`), with the task's write scope; where that
sandbox cannot be built, no QC command runs. The checkout is compared before and after:
every path the QC run created, changed or removed is checked against the scope again.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from capdaemon.capability.fspaths import NotACheckoutError, repo_root, word_checker
from capdaemon.capability.model import (
    Capability,
    CapabilitySnapshot,
    Violation,
    ViolationKind,
)
from capdaemon.capability.scope import check_command, check_path
from capdaemon.hookdirs import hook_folders
from capdaemon.jail import SETUP_FAILED, Jail, JailError, never_writable, prepare
from capdaemon.landlock import LandlockError

OUTPUT_TAIL_LINES = 15


@dataclass(frozen=True)
class QCResult:
    """One QC command: passed, failed (exit code, output tail), refused or not run."""

    command: str
    status: str  # "passed" | "failed" | "refused" | "not run"
    detail: str
    seconds: float = 0.0
    output: str = ""

    @property
    def violation(self) -> Violation | None:
        """The escalation finding for a failed or refused command."""
        if self.status == "failed":
            return Violation(ViolationKind.QC_FAILED, self.command, self.detail)
        if self.status == "refused":
            return Violation(ViolationKind.COMMAND, self.command, self.detail)
        return None

    def line(self) -> str:
        """One line for the command's output."""
        took = f", {self.seconds:.1f} s" if self.status in ("passed", "failed") else ""
        return f"QC {self.status.upper()}: {self.command} ({self.detail}{took})"


def admit(
    snapshot: CapabilitySnapshot, line: str, now: datetime, root: Path | None = None
) -> str | None:
    """Why a QC command may not run (None: it may); its path words are checked on disk from
    the checkout's `root` when given."""
    cap = snapshot.capability
    if cap.legacy or not cap.commands:
        return "the capability lists no commands (allowed_resources.commands), so no QC may run"
    paths = word_checker(cap, root) if root is not None else None
    violations = check_command(snapshot, line, now, paths=paths)
    if violations:
        return "; ".join(v.reason for v in violations)
    return None


@dataclass
class QCRun:
    """What the QC step did: one result per command, and the paths it changed that the
    scope does not allow (as violations)."""

    results: list[QCResult]
    changed: list[Violation] = field(default_factory=list)


def run_qc(
    snapshot: CapabilitySnapshot,
    commands: Sequence[str],
    repo: Path,
    now: datetime,
    *,
    state: Path,
    timeout: float = 1800.0,
) -> QCRun:
    """Check then run each command in order, confined, from the checkout's root; stop at the
    first that fails or is refused; then judge what the run changed in the checkout."""
    try:
        root: Path | None = repo_root(repo)
    except NotACheckoutError:
        root = None  # lexical checks only; finish-task refuses such a folder anyway
    if not commands:
        return QCRun([])
    where = os.path.realpath(root or repo)
    before = tree_state(where)
    tmpdir = tempfile.mkdtemp(prefix=f"capdaemon-qc-{snapshot.task_id}-")
    jail: Jail | str
    try:
        cap = snapshot.capability
        jail = prepare(cap, where, tmpdir, never=never_writable(state, where, cap), cwd=where)
    except (JailError, LandlockError, OSError) as exc:
        jail = f"the sandbox cannot be built here: {exc.strerror or exc}"
    try:
        results = _run_all(snapshot, commands, root, Path(where), now, jail, timeout, tmpdir)
    finally:
        if isinstance(jail, Jail):
            jail.close()
        shutil.rmtree(tmpdir, ignore_errors=True)
    return QCRun(results, changed_by_qc(snapshot.capability, where, before))


def _run_all(
    snapshot: CapabilitySnapshot,
    commands: Sequence[str],
    root: Path | None,
    where: Path,
    now: datetime,
    jail: Jail | str,
    timeout: float,
    tmpdir: str,
) -> list[QCResult]:
    out: list[QCResult] = []
    stopped = False
    for line in commands:
        if stopped:
            out.append(QCResult(line, "not run", "an earlier QC command did not pass"))
            continue
        why = admit(snapshot, line, now, root)
        if why is None and isinstance(jail, str):
            why = jail
        if why is not None or isinstance(jail, str):
            out.append(QCResult(line, "refused", why or ""))
            stopped = True
            continue
        res = _run_one(line, jail, where, timeout, tmpdir)
        out.append(res)
        stopped = res.status != "passed"
    return out


def _run_one(line: str, jail: Jail, where: Path, timeout: float, tmpdir: str) -> QCResult:
    """One QC command with bash, in the sandbox: passed or failed, with its output's tail."""
    started = time.monotonic()
    exe, argv = jail.command(shutil.which("bash") or "/bin/bash", ["bash", "-c", line])
    env = {**os.environ, "TMPDIR": tmpdir, "TMP": tmpdir, "TEMP": tmpdir}
    try:
        proc = subprocess.run(
            argv,
            executable=exe,
            pass_fds=jail.fds,
            cwd=where,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return QCResult(line, "failed", f"timed out after {timeout:g} s", timeout)
    except OSError as exc:
        return QCResult(line, "failed", f"could not run: {exc.strerror}")
    if jail.setup_failed():
        said = "\n".join(proc.stderr.splitlines()[-OUTPUT_TAIL_LINES:])
        return QCResult(line, "refused", SETUP_FAILED, 0.0, said)
    took = time.monotonic() - started
    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-OUTPUT_TAIL_LINES:])
    if proc.returncode == 0:
        return QCResult(line, "passed", "exit 0", took, tail)
    return QCResult(line, "failed", f"exit {proc.returncode}", took, tail)


_Sig = tuple[int, int, int, int, int]  # (mode, inode, size, mtime ns, ctime ns)


def tree_state(root: str) -> dict[str, _Sig]:
    """Every path below `root` but `.git` folders, with what any change to it changes (a
    write moves the ctime, which no program can set back)."""
    out: dict[str, _Sig] = {}
    stack = [("", root)]
    while stack:
        rel, path = stack.pop()
        try:
            entries = list(os.scandir(path))
        except OSError:
            continue
        for e in entries:
            name = f"{rel}/{e.name}" if rel else e.name
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            out[name] = (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            if stat.S_ISDIR(st.st_mode) and e.name != ".git":
                stack.append((name, e.path))
    return out


def changed_by_qc(cap: Capability, root: str, before: dict[str, _Sig]) -> list[Violation]:
    """The paths created, changed or removed since `before` that the scope does not allow
    (a folder's own times change with its entries: folders count only when made or removed)."""
    after = tree_state(root)
    hooks = () if cap.hooks_writable else tuple(h + "/" for h in hook_folders(root))
    out = []
    for rel in sorted(before.keys() ^ after.keys() | {
        p for p, sig in after.items()
        if p in before and before[p] != sig and not stat.S_ISDIR(sig[0])
    }):  # fmt: skip
        v = check_path(cap, rel)
        if v is None and (rel + "/").startswith(hooks):
            v = Violation(ViolationKind.FORBIDDEN, rel, "a git hooks folder")
        if v is not None:
            what = "created" if rel not in before else "removed" if rel not in after else "changed"
            out.append(Violation(v.kind, rel, f"{what} by the QC run: {v.reason}", v.pattern))
    return out
