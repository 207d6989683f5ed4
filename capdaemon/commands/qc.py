"""finish-task's QC step: run the task's QC commands, each first checked like scope-guard does.

A QC command runs only if the capability's command allow-list admits it (the scope guard's
own check: every simple command of the line, no substitutions, no dangerous assignments) and
it writes into no file; a capability without a command allow-list admits no QC command (fail
closed). Commands run in order with bash in the task's work tree, bounded by a timeout; the
first failure stops the rest.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from capdaemon.capability.fspaths import NotACheckoutError, repo_root, word_checker
from capdaemon.capability.model import CapabilitySnapshot, Violation, ViolationKind
from capdaemon.capability.scope import check_command

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


def run_qc(
    snapshot: CapabilitySnapshot,
    commands: Sequence[str],
    repo: Path,
    now: datetime,
    *,
    timeout: float = 1800.0,
) -> list[QCResult]:
    """Check then run each command in order, from the checkout's root; stop at the first
    that fails or is refused."""
    out: list[QCResult] = []
    try:
        root: Path | None = repo_root(repo)
    except NotACheckoutError:
        root = None  # lexical checks only; finish-task refuses such a folder anyway
    stopped = False
    for line in commands:
        if stopped:
            out.append(QCResult(line, "not run", "an earlier QC command did not pass"))
            continue
        why = admit(snapshot, line, now, root)
        if why is not None:
            out.append(QCResult(line, "refused", why))
            stopped = True
            continue
        started = time.monotonic()
        try:
            proc = subprocess.run(
                ["bash", "-c", line],
                cwd=root or repo,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            out.append(QCResult(line, "failed", f"timed out after {timeout:g} s", timeout))
            stopped = True
            continue
        except OSError as exc:
            out.append(QCResult(line, "failed", f"could not run: {exc.strerror}"))
            stopped = True
            continue
        took = time.monotonic() - started
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-OUTPUT_TAIL_LINES:])
        if proc.returncode == 0:
            out.append(QCResult(line, "passed", "exit 0", took, tail))
        else:
            out.append(QCResult(line, "failed", f"exit {proc.returncode}", took, tail))
            stopped = True
    return out
