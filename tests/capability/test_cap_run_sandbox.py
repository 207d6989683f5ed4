"""`scope-guard run` confines the process, not only its paths: each attack against the real
kernel, through the real CLI (a child process), with the task's `network: false`.

- keystrokes pushed into the caller's terminal (TIOCSTI) that the shell runs afterwards;
- a write into another terminal;
- MPTCP, UDP and a pathname unix socket of a daemon outside;
- a double-forked daemon still writing after the run returned.
"""

from __future__ import annotations

import os
import pty
import select
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from capdaemon import seccomp

from .confined import actions, checkout, confined, venv_env
from .helpers import Git

PROBE = ("scope-probe",)
EACCES = 13


@pytest.fixture
def co(tmp_path: Path) -> Git:
    return checkout(tmp_path / "repo")


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "bot-state"


@pytest.fixture
def task(co: Git, state: Path, tmp_path: Path) -> str:
    """Dispatch the confined.py task (network: false) plus `inject`, for the terminal test."""
    from capdaemon.cli import main

    from .confined import TASK

    path = tmp_path / "task.yml"
    path.write_text(TASK.replace('["scope-probe"]', '["scope-probe", "inject"]'))
    assert main(["dispatch", str(path), "--state", str(state), "--repo", str(co.root)]) == 0
    return "run-1"


# -- the terminal ------------------------------------------------------------------------

INJECT = """\
import fcntl, termios
for fd in (0, 1, 2):
    try:
        for ch in "touch {mark}\\n":
            fcntl.ioctl(fd, termios.TIOCSTI, ch.encode())
        print("injected through", fd)
        break
    except OSError as exc:
        print("refused:", exc)
"""


def _read_until(fd: int, marker: bytes, seconds: float = 60.0) -> bytes:
    got = b""
    end = time.monotonic() + seconds
    while marker not in got and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                got += os.read(fd, 4096)
            except OSError:
                break
    return got


def test_tiocsti_into_the_callers_shell_is_refused(co: Git, state: Path, task: str) -> None:
    """An interactive bash on a pseudo-terminal runs `scope-guard run -- inject`; the program
    pushes `touch MARK` into the terminal's input (TIOCSTI, which root may do on any
    terminal). The shell must not run it after the run ends."""
    mark = co.root.parent / "pwned"
    inject = co.root.parent / "bin" / "inject"
    inject.write_text(f"#!{sys.executable}\n" + INJECT.format(mark=mark))
    inject.chmod(0o755)
    env = venv_env(PATH=f"{inject.parent}{os.pathsep}{venv_env()['PATH']}", PS1="$ ")
    env.pop("PROMPT_COMMAND", None)
    pid, fd = pty.fork()
    if pid == 0:  # the child: an interactive shell on the pty
        os.chdir(co.root)
        os.execvpe("bash", ["bash", "--norc", "--noprofile", "-i"], env)
    try:
        cli = f"{sys.executable} -m capdaemon.cli scope-guard run --task {task} --state {state}"
        os.write(fd, f"{cli} -- inject; echo RUN''-ENDED\n".encode())
        out = _read_until(fd, b"RUN-ENDED")
        assert b"RUN-ENDED" in out, out
        time.sleep(0.5)  # the shell reads whatever was injected as its next line
        os.write(fd, b"echo SHELL''-IDLE\n")
        out += _read_until(fd, b"SHELL-IDLE")
        assert b"SHELL-IDLE" in out, out
        assert not mark.exists(), out.decode(errors="replace")
        assert b"refused:" in out
    finally:
        os.write(fd, b"exit\n")
        os.close(fd)
        os.waitpid(pid, 0)


def test_another_terminal_is_not_writable(co: Git, state: Path, task: str) -> None:
    """A second terminal (a pty the test opens) is not reachable from inside the run."""
    master, slave = os.openpty()
    try:
        name = os.ttyname(slave)
        run = confined(state, co.root, task, *PROBE, ops=[["append", name]])
        assert run.code == 0, run.err
        assert run.errnos()[0] != 0
        ready, _, _ = select.select([master], [], [], 0.3)
        assert not ready, os.read(master, 100)
    finally:
        os.close(master)
        os.close(slave)


# -- the network (network: false) --------------------------------------------------------


class _Listener:
    """A listener outside the sandbox, recording what reached it."""

    def __init__(self, sock: socket.socket, stream: bool = True) -> None:
        self.sock, self.got = sock, []
        self.sock.settimeout(0.2)
        self.stop = False
        self.thread = threading.Thread(target=self._serve if stream else self._recv, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    self.got.append(conn.recv(100))
                except OSError:
                    self.got.append(b"")

    def _recv(self) -> None:
        while not self.stop:
            try:
                self.got.append(self.sock.recv(100))
            except OSError:
                continue

    def close(self) -> list[bytes]:
        time.sleep(0.3)
        self.stop = True
        self.thread.join()
        self.sock.close()
        return self.got


def test_mptcp_udp_and_unix_sockets_reach_nothing(co: Git, state: Path, task: str) -> None:
    """MPTCP to a TCP listener, a UDP datagram and a pathname unix socket, all on this
    machine and listening outside the sandbox: each is refused, and none receives a byte."""
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    path = str(co.root.parent / "daemon.sock")
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(path)
    unix.listen()
    listeners = [_Listener(tcp), _Listener(udp, stream=False), _Listener(unix)]
    ops = [
        ["mptcp", str(tcp.getsockname()[1])],
        ["udp", str(udp.getsockname()[1])],
        ["unix", path],
        ["socketpair"],
    ]
    run = confined(state, co.root, task, *PROBE, ops=ops)
    got = [listener.close() for listener in listeners]
    assert run.code == 0, run.err
    assert run.errnos() == [EACCES, EACCES, EACCES, 0], run.probe
    assert got == [[], [], []]


def test_the_filter_is_what_the_kernel_runs() -> None:
    """The compiled filter: one instruction per table entry, and an unknown machine is an
    error naming it (never a program that would allow everything)."""
    prog = seccomp.network_filter(False, "x86_64")
    assert len(prog) % 8 == 0 and 8 <= len(prog) // 8 <= 12
    assert seccomp.network_filter(True, "x86_64") == b""
    with pytest.raises(seccomp.SeccompError, match="riscv64"):
        seccomp.network_filter(False, "riscv64")


# -- processes ---------------------------------------------------------------------------


def test_a_double_forked_daemon_dies_with_the_run(co: Git, state: Path, task: str) -> None:
    """A program leaves a daemon (double fork, new session) appending to an allowed file;
    when `run` returns it is gone, and nothing is written afterwards."""
    out = co.root / "src" / "app.py"  # an existing file the task may write
    run = confined(state, co.root, task, *PROBE, ops=[["daemon", str(out), "100"]])
    assert run.code == 0, run.err
    size = out.stat().st_size
    assert size > len("VALUE = 1\n")  # it ran, and wrote, while the run lasted
    time.sleep(0.6)
    assert out.stat().st_size == size


def test_the_audit_entry_names_the_layers(co: Git, state: Path, task: str) -> None:
    """The `scope_run` entry says which sandbox layers were in force."""
    assert confined(state, co.root, task, *PROBE).code == 0
    start = actions(state)[-2]
    layers = " | ".join(start["sandbox"])  # type: ignore[arg-type]
    assert "bubblewrap" in layers and "network namespace" in layers
    assert "seccomp" in layers and "landlock ABI" in layers


# -- where the sandbox cannot be had -----------------------------------------------------


def test_no_bubblewrap_refuses_in_one_line(
    co: Git, state: Path, task: str, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """Without bubblewrap the run is refused (exit 2) in one line naming what is missing and
    the opt-in; the program never starts."""
    from capdaemon import jail
    from capdaemon.cli import main

    monkeypatch.setattr(jail, "BWRAP_PATHS", (str(co.root.parent / "no-such-bwrap"),))
    monkeypatch.chdir(co.root)
    monkeypatch.setenv("PATH", f"{co.root.parent / 'bin'}{os.pathsep}{os.environ['PATH']}")
    mark = co.root / "src" / "app.py"
    before = mark.read_text()
    argv = ["scope-guard", "run", "--task", task, "--state", str(state), "--"]
    code = main([*argv, "scope-probe"])
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2
    assert len(lines) == 1, lines
    assert "bubblewrap" in lines[0] and "enforcement: landlock-only" in lines[0]
    assert mark.read_text() == before


def test_landlock_only_is_an_audited_opt_in(co: Git, tmp_path: Path) -> None:
    """`enforcement: landlock-only` runs without the process sandbox, keeps the write scope
    and the socket filter, and the audit entry says so."""
    from capdaemon.cli import main

    from .confined import TASK

    state = tmp_path / "state-lo"
    path = tmp_path / "lo.yml"
    path.write_text(TASK + "  enforcement: landlock-only\n")
    assert main(["dispatch", str(path), "--state", str(state), "--repo", str(co.root)]) == 0
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    ops = [["append", "cron_settings.json"], ["append", "src/app.py"],
           ["udp", str(udp.getsockname()[1])]]  # fmt: skip
    run = confined(state, co.root, "run-1", *PROBE, ops=ops)
    udp.close()
    assert run.code == 0 and run.errnos() == [EACCES, 0, EACCES], run.err
    start = actions(state)[-2]
    assert "only (enforcement: landlock-only)" in str(start["enforcement"])
    assert not any("bubblewrap" in s for s in start["sandbox"])  # type: ignore[union-attr]


def _system_python() -> str | None:
    """/usr/bin/python3 when it is this interpreter's version (`nobody` may not be able to
    reach this one), with this environment's packages on PYTHONPATH."""
    py = "/usr/bin/python3"
    if not os.path.exists(py):
        return None
    import subprocess

    got = subprocess.run([py, "-c", "import sys; print(sys.version_info[:2])"],
                         capture_output=True, text=True, check=False)  # fmt: skip
    return py if got.stdout.strip() == str(sys.version_info[:2]) else None


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
def test_an_unprivileged_user_gets_the_same_sandbox() -> None:
    """Run as `nobody` (bubblewrap then builds its namespaces in a user namespace): the write
    scope, the socket filter and the private terminals hold as they do for root."""
    import shutil
    import sysconfig
    import tempfile

    import capdaemon
    from capdaemon.cli import main

    from .confined import TASK

    python = _system_python()
    if python is None:
        pytest.skip("no /usr/bin/python3 of this version for the unprivileged user")
    code_dirs = [str(Path(capdaemon.__file__).parent.parent), sysconfig.get_paths()["purelib"]]
    base = Path(tempfile.mkdtemp(prefix="capdaemon-nobody-"))
    try:
        base.chmod(0o755)
        co = checkout(base / "repo")
        probe = base / "bin" / "scope-probe"
        probe.write_text(probe.read_text().replace(sys.executable, python, 1))
        state = base / "bot-state"
        (base / "task.yml").write_text(TASK)
        assert main(["dispatch", str(base / "task.yml"), "--state", str(state),
                     "--repo", str(co.root)]) == 0  # fmt: skip
        shutil.chown(base, "nobody", "nogroup")
        for folder, dirs, files in os.walk(base):
            for name in [*dirs, *files]:
                os.lchown(os.path.join(folder, name), 65534, 65534)
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        master, slave = os.openpty()
        ops = [["append", "cron_settings.json"], ["append", "src/app.py"],
               ["udp", str(udp.getsockname()[1])], ["append", os.ttyname(slave)]]  # fmt: skip
        who = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups")
        env = venv_env(HOME=str(base), PYTHONPATH=os.pathsep.join(code_dirs))
        run = confined(state, co.root, "run-1", *PROBE, ops=ops, prefix=who, env=env,
                       python=python)  # fmt: skip
        udp.close()
        os.close(master)
        os.close(slave)
        assert run.code == 0, run.err
        errnos = run.errnos()
        assert errnos[:3] == [EACCES, 0, EACCES] and errnos[3] != 0, run.probe
        assert "bubblewrap" in " ".join(actions(state)[-2]["sandbox"])  # type: ignore[arg-type]
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_sandbox_bubblewrap_cannot_build_is_a_refusal(
    co: Git, state: Path, task: str, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    """When bubblewrap itself fails before starting the program (here: a mount it cannot
    make, as it fails without user namespaces), `run` exits 2 saying so, not with an
    exit status that could pass for the program's."""
    from capdaemon import jail
    from capdaemon.cli import main

    real = jail.bwrap_args

    def broken(*args: object) -> list[str]:
        out = real(*args)  # type: ignore[arg-type]
        return [out[0], "--ro-bind", str(co.root.parent / "missing"), "/missing", *out[1:]]

    monkeypatch.setattr(jail, "bwrap_args", broken)
    monkeypatch.chdir(co.root)
    monkeypatch.setenv("PATH", f"{co.root.parent / 'bin'}{os.pathsep}{os.environ['PATH']}")
    code = main(["scope-guard", "run", "--task", task, "--state", str(state), "--", "scope-probe"])
    err = capfd.readouterr().err
    assert code == 2
    assert "bwrap:" in err and "bubblewrap could not set up the sandbox" in err
    assert "enforced by the kernel" not in err


def test_a_port_list_lets_tcp_through_but_not_mptcp(co: Git, tmp_path: Path) -> None:
    """`network: [PORT]`: a TCP connection to PORT works; an MPTCP socket to the same port,
    which Landlock's TCP rules would not see, is refused."""
    from capdaemon.cli import main

    from .confined import TASK

    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen()
    port = tcp.getsockname()[1]
    listener = _Listener(tcp)
    state = tmp_path / "state-ports"
    path = tmp_path / "ports.yml"
    path.write_text(TASK + f"  network: [{port}]\n")
    assert main(["dispatch", str(path), "--state", str(state), "--repo", str(co.root)]) == 0
    run = confined(state, co.root, "run-1", *PROBE, ops=[["connect", str(port)],
                                                         ["mptcp", str(port)]])  # fmt: skip
    listener.close()
    assert run.code == 0 and run.errnos() == [0, EACCES], run.err
