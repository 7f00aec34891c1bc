"""seccomp filters in plain Python (ctypes, no libseccomp), for the submission's process
(gradlab/practice/sandbox/box.py).

Stage 1 (gradlab/practice/inside/stage1.py) installs BASE before it execs the child; where the sandbox has no network
namespace of its own (the uid fallback), the child also installs INET once the harness has opened the loopback
connections it needs and before any code of the submission runs (gradlab.kit.harness.seal). This file is bound
into the sandbox, so it imports nothing but the standard library.

BASE   kills any other syscall ABI (i386, x32: their numbers differ and would bypass the table), and answers EPERM to
       creating or entering namespaces (unshare, setns, clone with a CLONE_NEW* flag; clone3 answers ENOSYS, so glibc
       falls back to clone, whose flags a filter can read), mount and the new mount API, io_uring (it opens files and
       sockets without passing through these syscalls), bpf, perf_event_open, userfaultfd, the keyring, reaching into
       another process (ptrace, process_vm_readv/writev, pidfd_getfd) and memory that RLIMIT_AS does not count
       (memfd_create, SysV shmget/semget/msgget), and POSIX message queues (mq_open: a queue outlives its process, and
       the uid fallback has no ipc namespace to drop it with). Without it a submission could unshare a user and mount
       namespace and mount a tmpfs of any size outside the sandbox's limits, or hold memfds and SysV segments far beyond
       RLIMIT_AS (a SysV segment outlives the process). torch, multiprocessing and gloo use none of these: POSIX
       semaphores and shared memory live in /dev/shm, a size-limited tmpfs in the sandbox.
INET   socket() fails with EACCES for every family, AF_UNIX included (socketpair() stays: multiprocessing's pipes and
       queues do not need socket()). A filter sees the family, an integer, not the address a connect() names (it is
       behind a pointer): "loopback only" cannot be said in seccomp, so the harness opens what gloo needs BEFORE
       the filter and nothing opens a socket after it.

    python -I seccomp.py     # self-test: what BASE + INET allow and refuse on this machine
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

_ARCH = {  # machine -> (AUDIT_ARCH, the seccomp syscall, {name: number})
    "x86_64": (0xC000003E, 317, {
        "socket": 41, "clone": 56, "clone3": 435, "unshare": 272, "setns": 308, "mount": 165, "umount2": 166,
        "pivot_root": 155, "chroot": 161, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "keyctl": 250, "add_key": 248, "request_key": 249,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "memfd_create": 319, "shmget": 29, "semget": 64, "msgget": 68, "ptrace": 101,
        "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438, "mq_open": 240}),
    "aarch64": (0xC00000B7, 277, {
        "socket": 198, "clone": 220, "clone3": 435, "unshare": 97, "setns": 268, "mount": 40, "umount2": 39,
        "pivot_root": 41, "chroot": 51, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "keyctl": 219, "add_key": 217, "request_key": 218,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "memfd_create": 279, "shmget": 194, "semget": 190, "msgget": 186, "ptrace": 117,
        "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438, "mq_open": 180}),
}
DENIED = ["unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "io_uring_setup", "io_uring_enter",
          "io_uring_register", "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
          "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
          "memfd_create", "shmget", "semget", "msgget", "ptrace", "process_vm_readv", "process_vm_writev",
          "pidfd_getfd", "mq_open"]
NAMESPACES = ["unshare", "setns", "mount", "umount2", "pivot_root"]  # what Docker's default profile refuses (tests)
CLONE_NEW = 0x7E020000 | 0x80  # CLONE_NEWNS NEWCGROUP NEWUTS NEWIPC NEWUSER NEWPID NEWNET, and NEWTIME

_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_KILL, _ALLOW, _ERRNO = 0x80000000, 0x7FFF0000, 0x00050000
_NR, _ARCH_OFF, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (args[0]'s low 32 bits: little-endian)


def supported() -> bool:
    """Whether this machine's architecture has a table here (x86_64, aarch64)."""
    return platform.machine() in _ARCH


def _ins(code: int, jt: int = 0, jf: int = 0, k: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def program(inet: bool = False, base: bool = True, denied: list[str] | None = None) -> bytes:
    """The filter as struct sock_filter[] bytes."""
    arch, _, nr = _ARCH[platform.machine()]
    p = [_ins(_LD_W_ABS, k=_ARCH_OFF), _ins(_JEQ, 1, 0, arch), _ins(_RET, k=_KILL), _ins(_LD_W_ABS, k=_NR)]
    if platform.machine() == "x86_64":  # the x32 ABI: the same numbers | 0x40000000
        p += [_ins(_JGE, 0, 1, 0x40000000), _ins(_RET, k=_KILL)]
    if base:
        for name in DENIED if denied is None else denied:
            p += [_ins(_JEQ, 0, 1, nr[name]), _ins(_RET, k=_ERRNO | errno.EPERM)]
        p += [_ins(_JEQ, 0, 1, nr["clone3"]), _ins(_RET, k=_ERRNO | errno.ENOSYS)]
        p += [_ins(_JEQ, 0, 4, nr["clone"]), _ins(_LD_W_ABS, k=_ARG0), _ins(_JSET, 0, 1, CLONE_NEW),
              _ins(_RET, k=_ERRNO | errno.EPERM), _ins(_RET, k=_ALLOW)]
    if inet:
        p += [_ins(_JEQ, 0, 1, nr["socket"]), _ins(_RET, k=_ERRNO | errno.EACCES)]
    p.append(_ins(_RET, k=_ALLOW))
    return b"".join(p)


def install(inet: bool = False, base: bool = True, denied: list[str] | None = None) -> None:
    """no_new_privs, then the filter on every thread of this process (TSYNC: torch's threads may exist already)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    code = program(inet, base, denied)
    buf = ctypes.create_string_buffer(code, len(code))

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = Fprog(len(code) // 8, ctypes.addressof(buf))
    libc.syscall.restype = ctypes.c_long
    # seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog)
    if libc.syscall(ctypes.c_long(_ARCH[platform.machine()][1]), 1, 1, ctypes.byref(prog)) != 0:
        raise OSError(ctypes.get_errno(), "seccomp(SET_MODE_FILTER)")


if __name__ == "__main__":
    import socket

    install(inet=True)
    socket.socketpair()[0].close()
    print("socketpair allowed")
    for family in (socket.AF_INET, socket.AF_INET6, socket.AF_UNIX):
        try:
            socket.socket(family).close()
            print(family.name, "allowed")
        except OSError as e:
            print(family.name, "refused:", e)
    libc = ctypes.CDLL(None, use_errno=True)
    print("unshare(CLONE_NEWUSER):", "allowed" if libc.unshare(0x10000000) == 0 else os.strerror(ctypes.get_errno()))
