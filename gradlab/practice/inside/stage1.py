"""Stage 1 of the sandbox (gradlab/practice/sandbox/box.py): the few lines that run as root (userns mode: as the
caller, in
its own user namespace), before anything of the submission, in bwrap's namespaces or directly (the uid fallback). Run
as `python -I -S` (nothing from site-packages or the environment is imported); bound into the sandbox, so it imports
nothing but the standard library and gradlab/kit/seccomp.py (bound beside it).

It sets the rlimits, moves itself into the sandbox's cgroup (the cgroup.procs files gradlab opened: cgroup_fds), empties
the capability bounding set, drops to the sandbox's own uid and gid for good (setgroups, setresgid, setresuid: the
kernel then clears every capability), empties every capability set, sets no_new_privs and the BASE seccomp filter,
closes every inherited fd but 0-2 and the two channels, and execs the child. With "uid": null (userns mode) it keeps
the caller's uid, which holds no capability in the user namespace bwrap made, and checks that it holds none and is not
root there.

    python -I -S stage1.py '{"uid": U, "gid": U, "rlimits": {"NPROC": n, ...}, "keep_fds": [...]}' ARGV...
"""

import contextlib
import ctypes
import json
import os
import resource
import sys


def main() -> None:
    # -I -S: no path but the standard library's; kit/seccomp.py, bound into the sandbox, is found through its folder
    # gradlab/practice/inside/stage1.py: three folders up is gradlab/
    gradlab_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.join(gradlab_dir, "kit"))
    import seccomp
    spec, argv = json.loads(sys.argv[1]), sys.argv[2:]
    with contextlib.suppress(OSError):
        os.setsid()  # its own session and process group (bwrap --new-session did it already)
    for name, value in spec["rlimits"].items():
        resource.setrlimit(getattr(resource, "RLIMIT_" + name), (value, value))
    for fd in spec.get("cgroup_fds", []):  # into the sandbox's cgroup, for good: every process after it starts there
        os.write(fd, b"0")
        os.close(fd)
    uid, gid = spec["uid"], spec["gid"]
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(64):  # PR_CAPBSET_DROP while CAP_SETPCAP is held: the uid change below clears every other set,
        libc.prctl(24, cap, 0, 0, 0)  # and no_new_privs forbids regaining any (userns: none held, nothing to drop)
    if uid is None:  # userns: the caller's uid, mapped to itself (its groups stay: a user namespace cannot drop them)
        uid = os.getuid()
        with open("/proc/self/status") as f:
            held = [line for line in f if line.startswith(("CapPrm", "CapEff", "CapInh", "CapAmb"))]
        if uid == 0 or os.getresuid() != (uid, uid, uid) or any(int(line.split()[1], 16) for line in held):
            raise SystemExit("gradlab sandbox: the user namespace holds root or a capability")
    else:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
            raise SystemExit("gradlab sandbox: could not drop privileges")
    try:
        os.setuid(0)
        raise SystemExit("gradlab sandbox: could regain root")
    except OSError:  # EPERM; in a user namespace, EINVAL: uid 0 is not mapped there
        pass
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # capset(version 3, this process): the inheritable set too
    if libc.capset(header, (ctypes.c_uint32 * 6)()) != 0:
        raise SystemExit("gradlab sandbox: capset failed")
    os.umask(0o077)
    seccomp.install(inet=False, base=True)
    keep = sorted({0, 1, 2, *spec["keep_fds"]})
    for lo, hi in zip(keep, [*keep[1:], 65536], strict=True):
        os.closerange(lo + 1, hi)
    os.execv(argv[0], argv)


if __name__ == "__main__":  # never on import: it changes this process's uid
    main()
