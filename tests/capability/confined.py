"""Helpers for the `scope-guard run` tests: a probe program, a checkout, and the CLI as a child.

Every confined run is a real `python -m capdaemon.cli scope-guard run` subprocess, so the
test process itself is never restricted. The probe reads what to try from stdin (never
from its command line, which the static check reads) and prints, as JSON, 0 or the errno
of each attempt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .helpers import Git

PROBE = r"""
import json, os, socket, sys

def op(kind, *a):
    if kind == "append":
        with open(a[0], "a") as fh:
            fh.write("probe\n")
    elif kind == "create":
        with open(a[0], "x") as fh:
            fh.write("probe\n")
    elif kind == "truncate":
        os.truncate(a[0], 0)
    elif kind == "unlink":
        os.unlink(a[0])
    elif kind == "rmdir":
        os.rmdir(a[0])
    elif kind == "mkdir":
        os.mkdir(a[0])
    elif kind == "rename":
        os.rename(a[0], a[1])
    elif kind == "link":
        os.link(a[0], a[1])
    elif kind == "symlink":
        os.symlink(a[0], a[1])
    elif kind == "connect":
        socket.create_connection(("127.0.0.1", int(a[0])), timeout=5).close()
    elif kind == "bind":
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.close()
    elif kind == "mptcp":  # socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP): not TCP to Landlock
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262) as s:
            s.settimeout(5)
            s.connect(("127.0.0.1", int(a[0])))
            s.sendall(b"mptcp")
    elif kind == "udp":
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"udp", ("127.0.0.1", int(a[0])))
    elif kind == "unix":  # a pathname unix socket of a daemon outside
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(a[0])
            s.sendall(b"unix")
    elif kind == "socketpair":
        x, y = socket.socketpair()
        x.sendall(b"p")
        assert y.recv(1) == b"p"
        x.close(), y.close()
    elif kind == "daemon":  # double fork, new session, keep appending to a[0] for a while
        import time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):  # a daemon lets go of its caller's pipes
                    os.dup2(null, fd)
                for _ in range(int(a[1])):
                    with open(a[0], "a") as fh:
                        fh.write("tick\n")
                    time.sleep(0.05)
            os._exit(0)
        os.wait()
        time.sleep(0.3)  # the daemon runs a while during the run
    elif kind == "tmpdir":
        with open(os.path.join(os.environ["TMPDIR"], "scratch"), "w") as fh:
            fh.write("x")
        print(os.environ["TMPDIR"], file=sys.stderr)
    elif kind == "signal":
        sys.stdout.flush()
        os.kill(os.getpid(), int(a[0]))
    elif kind == "exit":
        sys.stdout.flush()
        os._exit(int(a[0]))
    else:
        raise SystemExit(f"unknown op {kind}")

out = {}
for i, (kind, *args) in enumerate(json.load(sys.stdin)):
    try:
        print(json.dumps(out), flush=True) if kind in ("exit", "signal") else None
        op(kind, *args)
        out[f"{i}:{kind} {' '.join(args)}"] = 0
    except OSError as exc:
        out[f"{i}:{kind} {' '.join(args)}"] = exc.errno
print(json.dumps(out))
"""

TASK = """\
task_id: run-1
allowed_resources:
  paths: ["src/**", "scripts/finish-task.sh", "build/"]
  forbidden_paths: [".github/**", "memory/events/*.cron-*", "src/secret/**", "/cron_settings.json"]
  commands: ["scope-probe"]
"""


@dataclass
class Run:
    """One confined run: exit code, stdout, stderr, and the probe's answers when it printed."""

    code: int
    out: str
    err: str

    @property
    def probe(self) -> dict[str, int]:
        """The probe's last JSON line: attempt → 0 or errno."""
        lines = [ln for ln in self.out.splitlines() if ln.startswith("{")]
        assert lines, (self.code, self.out, self.err)
        result: dict[str, int] = json.loads(lines[-1])
        return result

    def errnos(self) -> list[int]:
        """The errno of each attempt, in order."""
        return list(self.probe.values())


def checkout(root: Path) -> Git:
    """A checkout with allowed, forbidden and neutral files; the probe as `scope-probe` in
    the folder `bin` beside it, which `confined` puts first on PATH."""
    g = Git(root)
    g.write(
        {
            "scripts/finish-task.sh": "#!/bin/sh\necho done\n",
            "cron_settings.json": '{"jobs": ["CC712188"]}\n',
            ".github/workflows/ci.yml": "on: push\n",
            "memory/events/job.cron-1": "0 * * * *\n",
            "memory/plans/plan.md": "plan\n",
            "src/app.py": "VALUE = 1\n",
            "src/pkg/mod.py": "X = 1\n",
            "src/secret/key.txt": "secret\n",
            "build/out.txt": "old\n",
            "README.md": "hello\n",
        }
    )
    g.commit("initial")
    probe = root.parent / "bin" / "scope-probe"  # on PATH: no path word on the command line
    probe.parent.mkdir(exist_ok=True)
    probe.write_text(f"#!{sys.executable}\n{PROBE}", encoding="utf-8")
    probe.chmod(0o755)
    return g


def venv_env(**extra: str) -> dict[str, str]:
    """The environment with this interpreter's bin folder first on PATH (pytest, python3)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', os.defpath)}"
    env.update(extra)
    return env


def confined(
    state: Path,
    repo: Path,
    task: str,
    *argv: str,
    ops: list[list[str]] | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    prefix: tuple[str, ...] = (),
    python: str = sys.executable,
) -> Run:
    """`capdaemon scope-guard run --task TASK --state STATE -- ARGV` as a real child process."""
    cmd = [*prefix, python, "-m", "capdaemon.cli", "scope-guard", "run"]
    cmd += ["--task", task, "--state", str(state), "--", *argv]
    proc = subprocess.run(
        cmd,
        input=json.dumps(ops or []),
        capture_output=True,
        text=True,
        cwd=cwd or repo,
        env=_with_probe(env or venv_env(), repo),
        timeout=120,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def _with_probe(env: dict[str, str], repo: Path) -> dict[str, str]:
    bin_dir = repo.parent / "bin"
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"} if bin_dir.is_dir() else env


def actions(state: Path) -> list[dict[str, object]]:
    """The entries of actions.jsonl."""
    path = state / "actions.jsonl"
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines()]
