"""Linux Landlock through ctypes: the ABI probe, a ruleset, its rules, and restricting a process.

Three system calls (`landlock_create_ruleset`, `landlock_add_rule`, `landlock_restrict_self`)
and `prctl(PR_SET_NO_NEW_PRIVS)`, called through libc's `syscall(2)` with every argument
passed as a C `long` (a variadic call must not leave the upper half of a register to chance).
The structures are packed with `struct` exactly as `<linux/landlock.h>` lays them out
(`landlock_path_beneath_attr` is `__attribute__((packed))`: 12 bytes).

Only write-type file-system rights are *handled* (so reading, listing and executing stay
unrestricted everywhere); TCP bind/connect from ABI 4; abstract unix sockets and signals
scoped to the sandbox from ABI 6. Nothing here runs at import time.
"""

from __future__ import annotations

import os
import struct
import sys

TYPE_CHECKING = False  # typing costs ~2 ms to import; annotations here are strings
if TYPE_CHECKING:
    import ctypes

# <linux/landlock.h>
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5

NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4

SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

# The write-type rights of ABI 1: everything that creates, changes or removes a name or
# a file's content. Reading, listing and executing are deliberately not handled.
_WRITE_V1 = (
    FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_CHAR | FS_MAKE_DIR | FS_MAKE_REG
    | FS_MAKE_SOCK | FS_MAKE_FIFO | FS_MAKE_BLOCK | FS_MAKE_SYM
)  # fmt: skip
# Rights a rule on a regular file (not a directory) may carry.
_FILE_RIGHTS = FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV

_SYS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}  # same numbers on both
_PR_SET_NO_NEW_PRIVS = 38
_O_PATH = getattr(os, "O_PATH", 0o10000000)


class LandlockError(OSError):
    """Landlock is unavailable, or a ruleset could not be built or applied."""


def handled_fs(abi: int) -> int:
    """The write-type file-system rights handled at `abi` (REFER from 2, TRUNCATE from 3,
    device ioctls from 5: an ioctl on a device opened inside the sandbox needs a grant)."""
    out = _WRITE_V1
    if abi >= 2:
        out |= FS_REFER
    if abi >= 3:
        out |= FS_TRUNCATE
    if abi >= 5:
        out |= FS_IOCTL_DEV
    return out


def file_rights(abi: int) -> int:
    """The rights granted on a single writable file: write, truncate from ABI 3, device
    ioctls from ABI 5 (meaningful only on a device)."""
    return _FILE_RIGHTS & handled_fs(abi)


def remove_rights() -> int:
    """The rights to remove (or move out) entries beneath a folder."""
    return FS_REMOVE_FILE | FS_REMOVE_DIR


_libc: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc


def _syscall(number: int, *args: int | bytes | None) -> int:
    """libc syscall(2) with every integer argument as a C long; -1 raises LandlockError."""
    import ctypes

    lib = _lib()
    conv: list[object] = [ctypes.c_long(number)]
    for a in args:
        if a is None or isinstance(a, bytes):
            conv.append(ctypes.c_char_p(a))
        else:
            conv.append(ctypes.c_long(a))
    res = int(lib.syscall(*conv))
    if res < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, os.strerror(err))
    return res


def _numbers() -> tuple[int, int, int]:
    if not sys.platform.startswith("linux"):
        raise LandlockError(0, f"Landlock is a Linux feature; this is {sys.platform}")
    machine = os.uname().machine
    nums = _SYS.get(machine)
    if nums is None:
        raise LandlockError(0, f"Landlock system call numbers unknown on {machine}")
    return nums


def abi_version() -> int:
    """The kernel's Landlock ABI version; LandlockError (one clear reason) when unavailable."""
    create, _, _ = _numbers()
    try:
        return _syscall(create, None, 0, CREATE_RULESET_VERSION)
    except LandlockError as exc:
        import errno

        why = {
            errno.ENOSYS: "the kernel has no Landlock system calls (Linux 5.13 or later needed)",
            errno.EOPNOTSUPP: "Landlock is built in but disabled (add landlock to the lsm= "
            "boot parameter)",
        }.get(exc.errno or 0, f"Landlock probe failed: {exc.strerror}")
        raise LandlockError(exc.errno or 0, why) from None


class Ruleset:
    """An open Landlock ruleset: handled rights fixed at creation, rules added one by one."""

    def __init__(self, abi: int, *, net: bool, scope: int) -> None:
        """`net`: handle TCP bind/connect (ABI ≥ 4); `scope`: SCOPE_* bits (ABI ≥ 6)."""
        self.abi = abi
        self.fs = handled_fs(abi)
        self.net = (NET_BIND_TCP | NET_CONNECT_TCP) if net and abi >= 4 else 0
        self.scope = scope if abi >= 6 else 0
        self.rules = 0
        create, self._add, self._restrict = _numbers()
        attr = struct.pack("=QQQ", self.fs, self.net, self.scope)
        size = 8 if abi < 4 else (16 if abi < 6 else 24)
        self.fd = _syscall(create, attr[:size], size, 0)

    def allow_path(self, path: str, access: int, *, directory: bool) -> None:
        """Grant `access` beneath `path` (a folder) or on it (a file), never following a
        final symlink: the rule is on the object that is at `path` itself."""
        access &= self.fs if directory else (self.fs & _FILE_RIGHTS)
        if not access:
            return
        fd = os.open(path, _O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
        try:
            _syscall(self._add, self.fd, RULE_PATH_BENEATH, struct.pack("=Qi", access, fd), 0)
        finally:
            os.close(fd)
        self.rules += 1

    def allow_port(self, port: int, access: int = NET_CONNECT_TCP) -> None:
        """Grant TCP `access` (connect by default) to `port`."""
        if not self.net:
            return
        _syscall(self._add, self.fd, RULE_NET_PORT, struct.pack("=QQ", access, port), 0)
        self.rules += 1

    def restrict_self(self) -> None:
        """no_new_privs, then enforce the ruleset on the calling thread and what it starts later
        (call it in a child, or in a thread of its own that then starts the program)."""
        _lib_prctl(_PR_SET_NO_NEW_PRIVS, 1)
        _syscall(self._restrict, self.fd, 0)

    def close(self) -> None:
        """Close the ruleset's file descriptor (the restriction, once applied, stays)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _lib_prctl(option: int, value: int) -> None:
    import ctypes

    res = _lib().prctl(
        ctypes.c_int(option), ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
        ctypes.c_ulong(0),
    )  # fmt: skip
    if res != 0:
        err = ctypes.get_errno()
        raise LandlockError(err, f"prctl({option}): {os.strerror(err)}")
