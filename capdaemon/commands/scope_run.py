"""`capdaemon scope-guard run --task ID [--repo DIR] -- CMD ARGS...`: check, then run confined.

The command line is checked exactly as `scope-guard --command` checks it; then CMD runs in
a child process under Linux Landlock (see `capdaemon.confine`), so that whatever it does it
writes only where the task may write, gets a private TMPDIR, and (unless the capability
allows it) makes no TCP connection. The exit status is CMD's (128+N when a signal N ended
it); scope-guard's own refusals are 1 (out of scope), 2 (bad input, or no Landlock for a
task that needs it), 126 (not executable) and 127 (not found). The run is audited before
and after (`scope_run`, `scope_run_exit` in actions.jsonl).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path

from capdaemon import landlock
from capdaemon.capability.fspaths import NotACheckoutError, here_in, repo_root, word_checker
from capdaemon.capability.model import (
    BadTaskIdError,
    validate_task_id,
)
from capdaemon.capability.scope import check_command
from capdaemon.capability.snapshot import guard_capability
from capdaemon.chainlog import append_entry
from capdaemon.commands._common import (
    add_state_arg,
    add_unused_config_arg,
    error,
    state_dir,
    unused_config_problem,
)
from capdaemon.commands.scope_guard import _refuse, snapshot_or_refuse
from capdaemon.filenames import ACTIONS_LOG
from capdaemon.jail import SETUP_FAILED, Jail, JailError, never_writable, prepare

TYPE_CHECKING = False  # typing costs ~2 ms to import; annotations here are strings
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from capdaemon.capability.model import Capability, CapabilitySnapshot

PROG = "scope-guard run"
SHOWN_GRANTS = 200  # writable paths listed in the audit entry (the count is always there)


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments."""
    parser.add_argument("--task", required=True, metavar="ID", help="the dispatched task id")
    add_state_arg(parser)
    add_unused_config_arg(parser)
    parser.add_argument(
        "--repo", metavar="DIR", help="a folder of the git checkout to confine to (default: cwd)"
    )
    parser.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD ARGS", help="command")


def run(args: argparse.Namespace) -> int:
    """Check, confine, run; the program's exit status (see the module docstring)."""
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        error(PROG, "give the command after --: scope-guard run --task ID -- CMD ARGS...")
        return 2
    problem = unused_config_problem(args)
    if problem:
        error(PROG, problem)
        return 2
    try:
        task_id = validate_task_id(args.task)
    except BadTaskIdError as exc:
        error(PROG, str(exc))
        return 2
    try:
        root = str(repo_root(Path(args.repo) if args.repo else Path.cwd()))
    except NotACheckoutError as exc:
        error(PROG, str(exc))
        return 2
    state = state_dir(args)
    if os.path.realpath(state) == root:
        error(PROG, f"the state directory {state} is the checkout itself; use another --state")
        return 2
    now = datetime.now(UTC)
    snap = _snapshot(state, task_id, now)
    if isinstance(snap, int):
        return snap
    import shlex

    # paths judged on disk from the checkout's root (and from here), as `--command` judges them
    cap = guard_capability(snap)  # the regexes stored at dispatch: no pathspec import
    words = word_checker(cap, Path(root), here_in(Path(root), Path.cwd()))
    violations = check_command(snap, shlex.join(argv), now, paths=words)  # expiry included
    if violations:
        return _refuse(state, task_id, violations, now)
    program = which(argv[0])
    if program is None:
        error(PROG, f"{argv[0]}: command not found (PATH={os.environ.get('PATH', '')})")
        return 127
    return _confined(cap, state, root, program, argv)


def which(program: str) -> str | None:
    """The executable `program` names (a path, or searched on PATH), else None."""
    if "/" in program:
        return program if os.path.isfile(program) else None
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or ".", program)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _snapshot(state: Path, task_id: str, now: datetime) -> CapabilitySnapshot | int:
    snap = snapshot_or_refuse(state, task_id, now)
    if isinstance(snap, int):
        return snap
    if snap.legacy:
        print(
            f"capdaemon {PROG}: WARNING: task {task_id} is LEGACY (dispatched with "
            "--allow-no-scope): it may write anywhere in the checkout but .git",
            file=sys.stderr,
        )
    return snap


def _confined(cap: Capability, state: Path, root: str, program: str, argv: list[str]) -> int:
    """Prepare the sandbox (or not, for check-only), audit, run, clean up, audit the exit."""
    audit = _Audit(state)
    tmpdir = _private_tmp(cap.task_id)
    record: dict[str, object] = {"network": _network_text(cap.network)}
    jail: Jail | None = None
    unset = False  # bubblewrap could not set the sandbox up: the program never ran
    try:
        try:
            jail = prepare(cap, root, tmpdir, never=never_writable(state, root, cap))
        except (JailError, landlock.LandlockError) as exc:
            error(
                PROG,
                f"cannot enforce task {cap.task_id}'s scope: {exc.strerror}; refusing to run "
                "(a task with `enforcement: check-only` runs with the check alone)",
            )
            return 2
        if cap.enforcement == "check-only":
            record["network"] = "unrestricted (check-only)"
        else:
            record |= {
                "sandbox": jail.layers,
                "writable_count": len(jail.writable),
                "writable": jail.writable[:SHOWN_GRANTS],
                "held_back": jail.held_back[:SHOWN_GRANTS],
            }
        exe, line = jail.command(program, argv)
        env = {**os.environ, **_tmp_env(tmpdir)}
        child = _Child(exe, line, env, session=bool(jail.prefix))
        # the program starts once the entry is on disk; the head pointer moves meanwhile
        entry = audit(
            "scope_run", cap.task_id, argv, jail.level, root, durable=child.start, **record
        )
        status = child.wait()  # started here when the entry could not be written
        if child.pid and jail.setup_failed():
            error(PROG, f"cannot enforce task {cap.task_id}'s scope: {SETUP_FAILED}")
            status, unset = 2, True
    finally:
        if jail is not None:
            jail.close()
        _remove_tree(tmpdir)
    audit("scope_run_exit", cap.task_id, argv, jail.level, root, exit=status)
    if status != 0 and jail.ruleset is not None and not unset:
        where = f"{state / ACTIONS_LOG} entry {entry}" if entry else "the audit log"
        print(
            f"capdaemon {PROG}: task {cap.task_id}'s scope was enforced by the kernel "
            f"({jail.level}): a write outside it fails as the program's own 'Permission "
            f"denied' (EACCES); what was writable: {where}",
            file=sys.stderr,
        )
    return status


def _network_text(network: bool | tuple[int, ...]) -> str:
    if network is True:
        return "unrestricted"
    if network is False:
        return "no TCP bind or connect"
    return "TCP connect to ports " + ", ".join(str(p) for p in network)


def _private_tmp(task_id: str) -> str:
    base = os.environ.get("TMPDIR") or "/tmp"
    path = os.path.join(base, f"capdaemon-run-{task_id}-{os.urandom(6).hex()}")
    os.mkdir(path, 0o700)
    return os.path.realpath(path)


def _tmp_env(tmpdir: str) -> dict[str, str]:
    return {"TMPDIR": tmpdir, "TMP": tmpdir, "TEMP": tmpdir}


def _remove_tree(path: str) -> None:
    try:
        os.rmdir(path)  # most programs leave their TMPDIR empty: no shutil import (~4-10 ms)
    except OSError:
        import shutil

        shutil.rmtree(path, ignore_errors=True)


class _Audit:
    """The run's two audit entries, appended to actions.jsonl by the import-light chain writer
    (`capdaemon.chainlog`: the same lock, head check, torn-tail repair and fsync as AuditLog)."""

    def __init__(self, state: Path) -> None:
        self.path = state / ACTIONS_LOG

    def __call__(
        self,
        action: str,
        task_id: str,
        argv: list[str],
        level: str,
        root: str,
        *,
        durable: Callable[[], None] | None = None,
        **extra: object,
    ) -> int | None:
        """Append one entry; its seq, or None when it could not be written (said on stderr).
        `durable` is called once the entry is on disk, before the head pointer moves."""
        entry = {
            "action": action,
            "layer": "scope-guard",
            "task_id": task_id,
            "command": argv,
            "enforcement": level,
            "checkout": root,
            **extra,
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            then = None if durable is None else (lambda _rec: durable())
            rec = append_entry(self.path, entry, self._repaired, then)
            return int(rec["seq"])
        except Exception as exc:  # the run is not refused for a log it cannot write: said
            error(PROG, f"could not write the audit entry {action}: {exc}")
            return None

    def _repaired(self, moved: dict[str, object]) -> None:
        print(
            f"capdaemon {PROG}: WARNING: {self.path}: a torn final line ({moved['bytes']} "
            f"bytes) was moved to {moved['moved_to']}; the repair is recorded in the log",
            file=sys.stderr,
        )


class _Child:
    """The program: started once, then waited for, with SIGTERM and SIGHUP forwarded to it and
    SIGINT and SIGQUIT left to it meanwhile (forwarded too when it runs in a session of its
    own, where the terminal's signals no longer reach it).

    Started with posix_spawn (no copy of this process's page tables: ~2 ms less than fork);
    the confinement is applied inside it (`capdaemon.jail`), so scope-guard itself stays
    free to write the audit log.
    """

    def __init__(self, exe: str, argv: list[str], env: dict[str, str], *, session: bool) -> None:
        self.exe, self.argv, self.env, self.session = exe, argv, env, session
        self.pid = 0
        self.failed: int | None = None  # scope-guard's own exit status when it did not start
        self.handlers: dict[signal.Signals, Any] = {}

    def start(self) -> None:
        """Start the program (once); never raises: a failure is said, and `wait` returns 127
        (not found) or 126."""
        if self.pid or self.failed is not None:
            return
        try:
            pid = os.posix_spawn(self.exe, self.argv, self.env, setsigmask=())
        except FileNotFoundError as exc:
            error(PROG, f"cannot run {self.argv[0]}: {exc.strerror}")
            self.failed = 127
            return
        except Exception as exc:  # exec refused: the program never ran
            error(PROG, f"cannot run {self.argv[0]}: {exc}")
            self.failed = 126
            return
        self.pid = pid
        forwarded = _FORWARDED + _TERMINAL if self.session else _FORWARDED
        ignored = () if self.session else _TERMINAL
        forward = {s: signal.signal(s, lambda n, _f: os.kill(pid, n)) for s in forwarded}
        ignore = {s: signal.signal(s, signal.SIG_IGN) for s in ignored}
        self.handlers = forward | ignore

    def wait(self) -> int:
        """The program's exit status (128+N for a signal N), starting it first if need be."""
        self.start()
        if self.failed is not None:
            return self.failed
        try:
            _, status = os.waitpid(self.pid, 0)
        finally:
            for s, h in self.handlers.items():
                signal.signal(s, h)
        code = os.waitstatus_to_exitcode(status)
        return 128 - code if code < 0 else code


_FORWARDED = (signal.SIGTERM, signal.SIGHUP)
_TERMINAL = (signal.SIGINT, signal.SIGQUIT)
