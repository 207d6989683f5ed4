"""Run a program confined to a task's scope: bubblewrap, then Landlock and seccomp, then exec.

One home for what `scope-guard run` and finish-task's QC start on an agent's checkout. The
layers, outermost first (`enforcement: kernel`, the default):

- **bubblewrap** (`bwrap`, Debian package `bubblewrap`): a new session with no controlling
  terminal (`--new-session`: no TIOCSTI into the caller's terminal for a non-root program),
  no capabilities (`--cap-drop ALL`: root's CAP_SYS_ADMIN would allow TIOCSTI on any
  terminal), PID and IPC namespaces (every process started inside ends with the run:
  bubblewrap's init is PID 1 and the kernel kills the rest when it exits), `--die-with-parent`,
  a private `/dev` (its own devpts: no other terminal is reachable) and `/proc`, and with
  `network: false` a network namespace of its own (no interface but its own loopback). The
  file system is the host's, bound as it is: Landlock, not the mount table, confines writes.
- **the shim**: a few lines of Python run by this interpreter inside the sandbox (bubblewrap
  must mount first; Landlock forbids mounting once applied). It grants the sandbox's own
  devpts, applies the Landlock ruleset built here (inherited as a descriptor), installs the
  seccomp filter, and execs the program.
- **Landlock**: the task's write scope (`capdaemon.confine`), device ioctls refused outside
  the sandbox's own terminals (ABI 5), TCP per `network` (ABI 4), signals and abstract unix
  sockets scoped (ABI 6).
- **seccomp** (`capdaemon.seccomp`): with `network: false`, `socket(2)` refused for every
  family (pathname unix sockets of daemons outside included; `socketpair` stays) and
  io_uring refused; with a port list, MPTCP refused (Landlock's TCP rules do not see it).

`enforcement: landlock-only` (an explicit, audited opt-in) runs the shim without bubblewrap:
no namespaces, no session, no private /dev. `check-only` runs the program as it is.
Anything the default needs and the machine lacks is a `JailError`: one line, no downgrade.
"""

from __future__ import annotations

import os
import sys

from capdaemon import landlock, seccomp
from capdaemon.confine import build_ruleset, plan_for
from capdaemon.hookdirs import hook_folders

TYPE_CHECKING = False  # typing costs ~2 ms to import; annotations here are strings
if TYPE_CHECKING:
    from capdaemon.capability.model import Capability

# Where bubblewrap is looked for: system folders only, never the caller's PATH (a `bwrap`
# the agent put on PATH would be the sandbox).
BWRAP_PATHS = ("/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap")
PRIVATE_PTS = "/dev/pts"  # the sandbox's own devpts instance (bubblewrap's `--dev`)

SHIM = r"""
import ctypes, os, struct, sys
a = sys.argv
lib = ctypes.CDLL(None, use_errno=True)
lib.syscall.restype = ctypes.c_long
L, U = ctypes.c_long, ctypes.c_ulong
def die(what):
    e = ctypes.get_errno()
    sys.stderr.write("capdaemon sandbox: cannot confine: %s: %s\n" % (what, os.strerror(e)))
    os._exit(126)
fd, bpf, status, end = int(a[1]), bytes.fromhex(a[2]), int(a[3]), a.index("--", 4)
if status >= 0:  # the sandbox is up: say so to scope-guard
    os.write(status, b"up")
    os.close(status)
for g in a[4:end]:
    path, rights = g.rsplit("=", 1)
    if fd >= 0 and os.path.isdir(path):
        p = os.open(path, os.O_PATH | os.O_CLOEXEC)
        rule = ctypes.c_char_p(struct.pack("=Qi", int(rights), p))
        if lib.syscall(L(445), L(fd), L(1), rule, L(0)) < 0:
            die("landlock_add_rule " + path)
        os.close(p)
if lib.prctl(ctypes.c_int(38), U(1), U(0), U(0), U(0)) != 0:
    die("no_new_privs")
if fd >= 0:
    if lib.syscall(L(446), L(fd), L(0)) < 0:
        die("landlock_restrict_self")
    os.close(fd)
if bpf:
    buf = ctypes.create_string_buffer(bpf, len(bpf))
    prog = struct.pack("=H6xQ", len(bpf) // 8, ctypes.addressof(buf))
    if lib.prctl(ctypes.c_int(22), U(2), ctypes.c_char_p(prog), U(0), U(0)) != 0:
        die("seccomp")
try:
    os.execv(a[end + 1], a[end + 2:])
except OSError as exc:
    sys.stderr.write("capdaemon sandbox: cannot run %s: %s\n" % (a[end + 2], exc.strerror))
    os._exit(127 if isinstance(exc, FileNotFoundError) else 126)
"""


_STATUS_AT = 7  # where `command` puts the status descriptor in the shim's command line


class JailError(OSError):
    """The sandbox the task needs cannot be built here: one line naming what is missing."""


SETUP_FAILED = (
    "bubblewrap could not set up the sandbox (its reason is the `bwrap:` line above: user "
    "namespaces disabled, or a mount refused); `enforcement: landlock-only` opts into "
    "Landlock without the process sandbox"
)


def find_bwrap() -> str | None:
    """bubblewrap's path in a system folder, else None."""
    for path in BWRAP_PATHS:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


class Jail:
    """A prepared confinement: `command(program, argv)` is what to start (inheriting `fds`),
    `layers` what was in force (for the audit entry); `close()` when the program ended."""

    def __init__(self, level: str) -> None:
        self.level = level  # "check-only", "landlock ABI N only (...)", "... in bubblewrap"
        self.layers: list[str] = []
        self.prefix: list[str] = []
        self.shim: list[str] = []
        self.ruleset: landlock.Ruleset | None = None
        self.status: tuple[int, int] | None = None  # bubblewrap's --json-status-fd pipe
        self.writable: list[str] = []
        self.held_back: list[str] = []

    @property
    def fds(self) -> tuple[int, ...]:
        """Descriptors the started program must inherit (the Landlock ruleset)."""
        out = () if self.ruleset is None else (self.ruleset.fd,)
        return out if self.status is None else (*out, self.status[1])

    def started(self) -> None:
        """The program was started: this process's copy of the status pipe's end is closed."""
        if self.status is not None and self.status[1] >= 0:
            os.close(self.status[1])
            self.status = (self.status[0], -1)

    def setup_failed(self) -> bool:
        """True when the sandbox never came up: bubblewrap ended before the shim ran (its own
        message is on stderr already: no user namespaces, a mount refused)."""
        if self.status is None:
            return False
        self.started()
        os.set_blocking(self.status[0], False)
        try:
            said = os.read(self.status[0], 65536)
        except BlockingIOError:
            said = b""
        return b"up" not in said

    def command(self, program: str, argv: list[str]) -> tuple[str, list[str]]:
        """What to execute and its argv: bubblewrap's, the shim's, then `program` with
        `argv` (its argv[0] kept); `program` itself under check-only."""
        if not self.shim:
            return program, argv
        shim, write = self.shim, -1
        if self.prefix:  # a status pipe per start: did the sandbox come up?
            self._close_status()
            read, write = os.pipe()
            os.set_inheritable(write, True)
            self.status = (read, write)
        shim = [*shim[:_STATUS_AT], str(write), *shim[_STATUS_AT:]]
        line = [*self.prefix, *shim, "--", program, *argv]
        return line[0], line

    def close(self) -> None:
        """Close the ruleset's descriptor (the restriction, once applied, stays)."""
        if self.ruleset is not None:
            self.ruleset.close()
        self._close_status()

    def _close_status(self) -> None:
        if self.status is not None:
            self.started()
            os.close(self.status[0])
            self.status = None


def prepare(
    cap: Capability, root: str, tmpdir: str, *, never: tuple[str, ...] = (), cwd: str = ""
) -> Jail:
    """The confinement for `cap` on the checkout at `root` (real, absolute), with `tmpdir`
    writable; `never`: repository-relative folders never writable. JailError when the
    task's enforcement cannot be given here."""
    if cap.enforcement == "check-only":
        return Jail("check-only")
    bwrap = None
    if cap.enforcement == "kernel":
        bwrap = find_bwrap()
        if bwrap is None:
            raise JailError(
                0,
                "bubblewrap (bwrap) is not installed in /usr/bin (Debian package bubblewrap); "
                "`enforcement: landlock-only` opts into Landlock without the process sandbox",
            )
    try:
        abi = landlock.abi_version()
    except landlock.LandlockError as exc:
        raise JailError(exc.errno or 0, str(exc.strerror)) from None
    if abi < 4 and isinstance(cap.network, tuple):  # (`false` needs none: seccomp)
        raise JailError(0, f"Landlock ABI {abi} has no TCP port rules (Linux 6.7 or later)")
    try:
        filt = seccomp.network_filter(cap.network)
    except seccomp.SeccompError as exc:
        raise JailError(0, str(exc.strerror)) from None
    jail = Jail(
        f"landlock ABI {abi} only (enforcement: landlock-only)"
        if bwrap is None
        else f"landlock ABI {abi} in bubblewrap"
    )
    plan = plan_for(cap, root, never=never)
    jail.writable, jail.held_back = plan.writable(), plan.held_back
    jail.ruleset = build_ruleset(plan, abi, tmpdir, cap.network, host_terminals=bwrap is None)
    os.set_inheritable(jail.ruleset.fd, True)
    grants = []
    if bwrap is not None:
        jail.prefix = bwrap_args(bwrap, cap.network, cwd or root)
        jail.layers += ["bubblewrap: new session, no capabilities, pid+ipc namespaces, "
                        "private /dev and /proc, dies with its parent"]  # fmt: skip
        if cap.network is False:
            jail.layers.append("network namespace")
        grants.append(f"{PRIVATE_PTS}={landlock.file_rights(abi) | landlock.handled_fs(abi)}")
    jail.layers.append(f"landlock ABI {abi}: the task's write scope")
    if abi >= 5:
        jail.layers.append("device ioctls refused (Landlock IOCTL_DEV)")
    if filt:
        jail.layers.append("seccomp: " + seccomp.describe(cap.network))
    jail.shim = [sys.executable, "-I", "-S", "-c", SHIM, str(jail.ruleset.fd), filt.hex()]
    jail.shim += grants  # the status pipe's descriptor goes before them (`command`)
    return jail


def bwrap_args(bwrap: str, network: bool | tuple[int, ...], cwd: str) -> list[str]:
    """bubblewrap's command line up to `--` (the command follows it)."""
    args = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc"]
    if network is False:
        args.append("--unshare-net")
    args += ["--cap-drop", "ALL", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    return [*args, "--chdir", cwd, "--"]


def never_writable(state: str | os.PathLike[str], root: str, cap: Capability) -> tuple[str, ...]:
    """Repository-relative folders no run may write whatever the scope says: the state
    directory when it lives inside the checkout, and (unless the task sets
    `hooks_writable: true`) every folder git's hooks may come from."""
    out = []
    real = os.path.realpath(state)
    prefix = root.rstrip("/") + "/"
    if real.startswith(prefix):
        out.append(real[len(prefix) :])
    if not cap.hooks_writable:
        out += hook_folders(root)
    return tuple(out)
