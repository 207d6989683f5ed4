"""`scope-guard run` under the real kernel: writes, removals, renames, links, symlinks and TCP.

Each test runs the CLI as a child process (the test process is never restricted) in a real
git checkout, and a probe program tries the thing. In CI these run as root: Landlock holds
for root too, which `test_root_is_confined_too` states. Nothing here skips: a kernel
without Landlock fails the suite.
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from capdaemon.cli import main
from capdaemon.landlock import abi_version

from .confined import TASK, actions, checkout, confined
from .helpers import Git

OK, EACCES, EXDEV = 0, errno.EACCES, errno.EXDEV
PROBE = ("scope-probe",)


@pytest.fixture
def co(tmp_path: Path) -> Git:
    """The checkout (see confined.checkout)."""
    return checkout(tmp_path / "repo")


def dispatch(tmp_path: Path, state: Path, text: str) -> None:
    task = tmp_path / "task.yml"
    task.write_text(textwrap.dedent(text), encoding="utf-8")
    assert main(["dispatch", str(task), "--state", str(state)]) == 0


@pytest.fixture
def task(tmp_path: Path, state: Path) -> str:
    dispatch(tmp_path, state, TASK)
    return "run-1"


def read(co: Git, rel: str) -> str:
    return (co.root / rel).read_text(encoding="utf-8")


def test_kernel_offers_landlock() -> None:
    """The CI kernel has Landlock (ABI ≥ 1; TCP rules need 4): otherwise this suite fails."""
    assert abi_version() >= 4


def test_writes_inside_the_scope_succeed(co: Git, state: Path, task: str) -> None:
    ops = [
        ["append", "src/app.py"],  # an existing allowed file
        ["truncate", "scripts/finish-task.sh"],
        ["create", "src/pkg/new.py"],  # a new file in a folder wholly in scope
        ["mkdir", "src/pkg/sub"],
        ["rename", "src/pkg/new.py", "src/pkg/sub/moved.py"],
        ["symlink", "moved.py", "src/pkg/sub/link.py"],
        ["unlink", "src/pkg/mod.py"],
        ["create", "build/new.txt"],  # `build/`: everything below build
        ["unlink", "build/out.txt"],
    ]
    run = confined(state, co.root, task, *PROBE, ops=ops)
    assert run.code == 0, run.err
    assert run.errnos() == [OK] * len(ops), run.probe
    assert read(co, "src/app.py") == "VALUE = 1\nprobe\n"
    assert (co.root / "src/pkg/sub/moved.py").is_file()
    assert not (co.root / "src/pkg/mod.py").exists()


FORBIDDEN = {
    "cron_settings.json": '{"jobs": ["CC712188"]}\n',
    ".github/workflows/ci.yml": "on: push\n",
    "memory/events/job.cron-1": "0 * * * *\n",
    "src/secret/key.txt": "secret\n",
    "README.md": "hello\n",
}


def test_writes_outside_the_scope_fail_with_eacces(co: Git, state: Path, task: str) -> None:
    """Write, truncate, delete, create, rename, hard-link and symlink outside the scope, and
    through a symlink: each is the program's own EACCES and nothing changes on disk."""
    (co.root / "src/pkg/to-cron").symlink_to("../../cron_settings.json")
    ops = [
        ["append", "cron_settings.json"],
        ["append", ".github/workflows/ci.yml"],
        ["truncate", "memory/events/job.cron-1"],
        ["append", "src/secret/key.txt"],  # forbidden inside an allowed folder
        ["create", "src/secret/new.txt"],
        ["unlink", "README.md"],  # neither allowed nor forbidden
        ["unlink", "src/secret/key.txt"],
        ["create", ".github/workflows/evil.yml"],
        ["mkdir", "memory/events/new"],
        ["append", ".git/config"],
        ["create", "new-at-root.txt"],
        ["append", "src/pkg/to-cron"],  # through a symlink inside an allowed folder
        ["create", "/tmp/outside-the-checkout.txt"],
    ]
    run = confined(state, co.root, task, *PROBE, ops=ops)
    assert run.code == 0, run.err
    assert run.errnos() == [EACCES] * len(ops), run.probe
    for rel, text in FORBIDDEN.items():
        assert (co.root / rel).exists(), rel
        if text is not None:
            assert read(co, rel) == text, rel
    assert not (co.root / ".github/workflows/evil.yml").exists()
    assert not Path("/tmp/outside-the-checkout.txt").exists()


def test_moving_and_linking_forbidden_files_into_the_scope_fails(
    co: Git, state: Path, task: str
) -> None:
    """A rename or hard link of a forbidden file into a writable folder (to write it there)
    and a symlink to it are refused by the kernel; a cross-folder move may say EXDEV."""
    ops = [
        ["rename", ".github/workflows/ci.yml", "src/pkg/ci.yml"],
        ["link", ".github/workflows/ci.yml", "src/pkg/ci-link.yml"],
        ["rename", "src/secret/key.txt", "src/pkg/key.txt"],
        ["link", "src/secret/key.txt", "src/pkg/key-link.txt"],
        ["rename", "src/pkg/mod.py", ".github/workflows/mod.yml"],  # in scope → out
        ["symlink", "../secret/key.txt", "src/secret/l"],
    ]
    run = confined(state, co.root, task, *PROBE, ops=ops)
    assert run.code == 0, run.err
    assert all(e in (EACCES, EXDEV) for e in run.errnos()), run.probe
    assert read(co, ".github/workflows/ci.yml") == "on: push\n"
    assert read(co, "src/secret/key.txt") == "secret\n"
    assert not list((co.root / "src/pkg").glob("*.yml"))


def test_a_forbidden_name_is_never_created_in_an_allowed_folder(
    tmp_path: Path, state: Path
) -> None:
    """A forbidden glob that can match at any depth (`*.pem`) keeps new names out of every
    folder it could reach: existing allowed files stay writable, new files are refused."""
    co = checkout(tmp_path / "repo")
    dispatch(
        tmp_path,
        state,
        """\
        task_id: pem-1
        allowed_resources:
          paths: ["src/**"]
          forbidden_paths: ["*.pem"]
          commands: ["scope-probe"]
        """,
    )
    ops = [["append", "src/pkg/mod.py"], ["create", "src/pkg/key.pem"], ["create", "src/x.py"]]
    run = confined(state, co.root, "pem-1", *PROBE, ops=ops)
    assert run.errnos() == [OK, EACCES, EACCES], run.probe
    assert not (co.root / "src/pkg/key.pem").exists()


@pytest.mark.parametrize("name", ["src/ci-copy.yml", "src/pkg/deep/ci-copy.yml"])
def test_a_hard_link_to_a_forbidden_file_is_not_granted(
    co: Git, state: Path, task: str, name: str
) -> None:
    """An allowed name that is a second hard link of a forbidden file is held back, also
    inside a folder that would otherwise be granted whole (src/pkg)."""
    (co.root / name).parent.mkdir(parents=True, exist_ok=True)
    os.link(co.root / ".github/workflows/ci.yml", co.root / name)
    ops = [["append", name], ["append", "src/pkg/mod.py"]]
    run = confined(state, co.root, task, *PROBE, ops=ops)
    assert run.errnos() == [EACCES, OK], run.probe
    assert read(co, ".github/workflows/ci.yml") == "on: push\n"
    start = [a for a in actions(state) if a["action"] == "scope_run"][-1]
    assert start["held_back"] == [name]


def test_paths_are_judged_from_the_checkout_not_the_current_folder(
    co: Git, state: Path, task: str
) -> None:
    """From inside a forbidden folder, its files by their bare names are still forbidden."""
    here = co.root / ".github/workflows"
    run = confined(
        state, co.root, task, *PROBE, cwd=here,
        ops=[["append", "ci.yml"], ["create", "new.yml"]],
    )  # fmt: skip
    assert run.errnos() == [EACCES, EACCES], (run.probe, run.err)
    assert read(co, ".github/workflows/ci.yml") == "on: push\n"


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on 127.0.0.1 (in the unconfined test process); its port."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    try:
        yield srv.getsockname()[1]
    finally:
        srv.close()


def test_network_is_off_unless_the_capability_allows_it(
    tmp_path: Path, co: Git, state: Path, task: str, listener: int
) -> None:
    """No TCP connect or bind by default; `network: [port]` opens that port only;
    `network: true` opens everything."""
    port = str(listener)
    run = confined(state, co.root, task, *PROBE, ops=[["connect", port], ["bind"]])
    assert run.errnos() == [EACCES, EACCES], run.probe
    for name, net in (("net-port", f"[{listener}]"), ("net-any", "true")):
        dispatch(
            tmp_path,
            state,
            f"""\
            task_id: {name}
            allowed_resources:
              paths: ["src/**"]
              commands: ["scope-probe"]
              network: {net}
            """,
        )
    run = confined(state, co.root, "net-port", *PROBE, ops=[["connect", port], ["bind"]])
    assert run.errnos() == [OK, EACCES], run.probe
    run = confined(state, co.root, "net-any", *PROBE, ops=[["connect", port], ["bind"]])
    assert run.errnos() == [OK, OK], run.probe


def test_tmpdir_is_private_writable_and_removed(co: Git, state: Path, task: str) -> None:
    run = confined(state, co.root, task, *PROBE, ops=[["tmpdir"], ["create", "/tmp/x-shared"]])
    assert run.errnos() == [OK, EACCES], run.probe
    tmpdir = Path(run.err.strip().splitlines()[0])
    assert tmpdir.name.startswith("capdaemon-run-run-1-")
    assert not tmpdir.exists()  # removed after the run


def test_exit_status_one_line_and_audit(co: Git, state: Path, task: str) -> None:
    """The program's exit status comes back; a failing run gets one line saying the scope
    was enforced and where to look; both ends of the run are in the audit log."""
    run = confined(state, co.root, task, *PROBE, ops=[["append", "README.md"], ["exit", "3"]])
    assert run.code == 3
    lines = [ln for ln in run.err.splitlines() if "scope-guard run" in ln]
    assert len(lines) == 1 and "enforced by the kernel" in lines[0]
    assert "EACCES" in lines[0] and "actions.jsonl entry" in lines[0]
    start, end = actions(state)[-2:]
    assert start["action"] == "scope_run" and end["action"] == "scope_run_exit"
    assert start["command"] == end["command"] == list(PROBE)
    assert str(start["enforcement"]).startswith("landlock ABI ")
    assert end["exit"] == 3
    assert "src/pkg/**" in start["writable"]  # type: ignore[operator]
    ok = confined(state, co.root, task, *PROBE, ops=[["append", "src/app.py"]])
    assert ok.code == 0 and "scope-guard run" not in ok.err
    assert actions(state)[-1]["exit"] == 0


def test_a_signal_ends_it_as_128_plus_n(co: Git, state: Path, task: str) -> None:
    run = confined(state, co.root, task, *PROBE, ops=[["signal", "15"]])
    assert run.code == 128 + 15
    assert actions(state)[-1]["exit"] == 143


def test_root_is_confined_too(co: Git, state: Path, task: str) -> None:
    """As root (CI), with every capability, the kernel still refuses the write."""
    run = confined(state, co.root, task, *PROBE, ops=[["append", "cron_settings.json"]])
    assert run.errnos() == [EACCES]
    if os.environ.get("CI"):
        assert os.geteuid() == 0  # CI runs as root: this is the root case


def test_the_static_check_still_runs_first(co: Git, state: Path, task: str) -> None:
    """A command the capability does not allow is refused before anything runs."""
    run = confined(state, co.root, task, "python3", "-c", "pass")
    assert run.code == 1 and "OUT OF SCOPE" in run.err
    assert actions(state)[-1]["action"] == "scope_violation"


def test_bad_input_is_one_line(tmp_path: Path, co: Git, state: Path, task: str) -> None:
    """No command, not a checkout, a program not found, an unknown task: one line, refused."""
    plain = tmp_path / "plain"
    plain.mkdir()
    cases = [
        (confined(state, co.root, task), 2, "give the command after --"),
        (confined(state, plain, task, *PROBE, cwd=plain), 2, "not inside a git checkout"),
        (confined(state, co.root, "no-such-task", *PROBE), 1, "OUT OF SCOPE"),
        (confined(co.root, co.root, task, *PROBE), 2, "is the checkout itself"),
    ]
    dispatch(
        tmp_path,
        state,
        """\
        task_id: nf-1
        allowed_resources:
          paths: ["src/**"]
          commands: ["no-such-program-x"]
        """,
    )
    cases.append((confined(state, co.root, "nf-1", "no-such-program-x"), 127, "not found"))
    for run, code, text in cases:
        assert run.code == code, (run.code, run.err)
        assert text in run.err
        assert len([ln for ln in run.err.splitlines() if ln.startswith("capdaemon")]) <= 2


def test_the_state_directory_inside_the_checkout_is_never_writable(tmp_path: Path, co: Git) -> None:
    """Even with everything allowed, the audit log and snapshots are out of reach."""
    state = co.root / "src/bot-state"
    dispatch(
        tmp_path,
        state,
        """\
        task_id: all-1
        allowed_resources:
          paths: ["**"]
          commands: ["scope-probe"]
        """,
    )
    ops = [["append", "src/bot-state/actions.jsonl"], ["append", "src/app.py"]]
    run = confined(state, co.root, "all-1", *PROBE, ops=ops)
    assert run.errnos() == [EACCES, OK], run.probe


# -- a kernel without Landlock: the same kernel, its Landlock calls answered ENOSYS ------------

_SECCOMP = r"""
import ctypes, os, struct, sys
# BPF: if the syscall number is 444..446 (landlock_*) return ENOSYS, else allow.
ins = [
    (0x20, 0, 0, 0),                 # ld  [0]          (seccomp_data.nr)
    (0x35, 0, 3, 444),               # jge 444 ? next : allow
    (0x35, 2, 0, 447),               # jge 447 ? allow : next
    (0x06, 0, 0, 0x00050000 | 38),   # ret ERRNO(ENOSYS)
    (0x06, 0, 0, 0x7FFF0000),        # ret ALLOW
    (0x06, 0, 0, 0x7FFF0000),        # ret ALLOW
]
prog = b"".join(struct.pack("=HBBI", *i) for i in ins)
buf = ctypes.create_string_buffer(prog)
fprog = struct.pack("=HxxxxxxQ", len(ins), ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(38, 1, 0, 0, 0) == 0
assert libc.prctl(22, 2, ctypes.c_char_p(fprog), 0, 0) == 0, ctypes.get_errno()
os.execv(sys.argv[1], sys.argv[1:])
"""


def test_without_landlock_run_refuses_unless_check_only(
    tmp_path: Path, co: Git, state: Path, task: str
) -> None:
    """Where the kernel answers ENOSYS (no Landlock), `run` refuses in one line; a task that
    says `enforcement: check-only` runs with the static check alone."""
    assert ctypes.sizeof(ctypes.c_void_p) == 8
    shim = tmp_path / "no_landlock.py"
    shim.write_text(_SECCOMP, encoding="utf-8")
    prefix = (sys.executable, str(shim))
    run = confined(state, co.root, task, *PROBE, ops=[["append", "src/app.py"]], prefix=prefix)
    assert run.code == 2, run.err
    (line,) = [ln for ln in run.err.splitlines() if ln]
    assert "cannot enforce task run-1's scope" in line and "check-only" in line
    assert read(co, "src/app.py") == "VALUE = 1\n"  # nothing ran
    dispatch(
        tmp_path,
        state,
        """\
        task_id: co-1
        allowed_resources:
          paths: ["src/**"]
          commands: ["scope-probe"]
          enforcement: check-only
        """,
    )
    run = confined(state, co.root, "co-1", *PROBE, ops=[["append", "README.md"]], prefix=prefix)
    assert run.code == 0 and run.errnos() == [OK], run.err
    assert actions(state)[-1]["enforcement"] == "check-only"
