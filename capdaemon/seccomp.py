"""A tiny seccomp-BPF filter, table-driven: which system calls a sandboxed program may not make.

With `network: false` every `socket(2)` is refused (EACCES): every address family and
protocol, so no UDP, no MPTCP, no vsock and no pathname unix socket of a daemon outside;
`socketpair(2)` (a private pair of connected unix sockets) stays. With a list of TCP ports,
MPTCP sockets are refused (Landlock's TCP rules do not see them). io_uring is refused in both
(its requests open sockets without the `socket` system call). `network: true`: no filter.

A program of another architecture (x86's 32-bit ABI, x32) is killed or refused: the filter
knows only the native system call numbers. The filter is checked against the real kernel in
the tests; no libseccomp is needed (libseccomp's Python binding is only packaged for the
system interpreter).
"""

from __future__ import annotations

import os
import struct

# <linux/filter.h>, <linux/seccomp.h>
_LD_ABS_W = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
_NR, _ARCH, _ARGS = 0, 4, 16  # offsets in struct seccomp_data
_X32_BIT = 0x40000000
EACCES = 13
IPPROTO_MPTCP = 262

# machine → (AUDIT_ARCH_*, native numbers, has the x32 ABI)
ARCHES = {
    "x86_64": (0xC000003E, {"socket": 41, "io_uring_setup": 425}, True),
    "aarch64": (0xC00000B7, {"socket": 198, "io_uring_setup": 425}, False),
}

# network → refused calls: (name, None) every call; (name, (argument index, value)) when that
# argument's low 32 bits equal value.
Rule = tuple[str, tuple[int, int] | None]
NO_NETWORK: tuple[Rule, ...] = (("socket", None), ("io_uring_setup", None))
PORTS_ONLY: tuple[Rule, ...] = (("socket", (2, IPPROTO_MPTCP)), ("io_uring_setup", None))


class SeccompError(OSError):
    """No filter can be built for this machine."""


def rules_for(network: bool | tuple[int, ...]) -> tuple[Rule, ...]:
    """The refused calls for a task's `network`."""
    if network is True:
        return ()
    return NO_NETWORK if network is False else PORTS_ONLY


def describe(network: bool | tuple[int, ...]) -> str:
    """The filter in words (for the audit entry)."""
    if network is False:
        return "socket() refused for every family (socketpair stays), io_uring refused"
    if network is True:
        return "none"
    return "MPTCP sockets and io_uring refused"


def network_filter(network: bool | tuple[int, ...], machine: str = "") -> bytes:
    """The compiled filter (struct sock_filter[]) for `network`; b"" when nothing is refused."""
    rules = rules_for(network)
    return compile_rules(rules, machine) if rules else b""


def compile_rules(rules: tuple[Rule, ...], machine: str = "") -> bytes:
    """A filter refusing `rules` with EACCES, allowing the rest, killing other ABIs."""
    machine = machine or os.uname().machine
    if machine not in ARCHES:
        raise SeccompError(0, f"no seccomp table for {machine} (known: {', '.join(ARCHES)})")
    arch, numbers, x32 = ARCHES[machine]
    # ops: (code, k, jump-to-deny-if-true, skip-if-false); resolved to offsets below
    ops: list[tuple[int, int, str, int]] = [
        (_LD_ABS_W, _ARCH, "", 0),
        (_JEQ, arch, "next", 0),  # jt: skip the kill
        (_RET, RET_KILL_PROCESS, "", 0),
        (_LD_ABS_W, _NR, "", 0),
    ]
    if x32:
        ops.append((_JGE, _X32_BIT, "deny", 0))
    for name, arg in rules:
        nr = numbers[name]
        if arg is None:
            ops.append((_JEQ, nr, "deny", 0))
            continue
        index, value = arg
        ops += [
            (_JEQ, nr, "", 3),  # not this call: skip the argument test
            (_LD_ABS_W, _ARGS + 8 * index, "", 0),  # the low half (little-endian)
            (_JEQ, value & 0xFFFFFFFF, "deny", 0),
            (_LD_ABS_W, _NR, "", 0),
        ]
    deny = len(ops) + 1  # after the final allow
    out = []
    for i, (code, k, jt, jf) in enumerate(ops):
        t = {"": 0, "next": 1, "deny": deny - i - 1}[jt]
        out.append(struct.pack("=HBBI", code, t, jf, k))
    out.append(struct.pack("=HBBI", _RET, 0, 0, RET_ALLOW))
    out.append(struct.pack("=HBBI", _RET, 0, 0, RET_ERRNO | EACCES))
    return b"".join(out)
