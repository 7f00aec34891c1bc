"""The command lines of a sandbox: bubblewrap's options (namespaces, the read-only binds, the synthetic /etc files,
the tmpfs sizes) and stage 1's (gradlab/practice/inside/stage1.py: the rlimits, the uid, the cgroup, seccomp)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

from gradlab.practice.sandbox.limits import STARTUP_S, Limits, package_dir

PKG, BOX = "/opt/gradlab-child", "/box"  # in the bwrap sandbox: gradlab's files for the child, the working folder


# -------------------------------------------------------------------------------------------------- the bwrap argv

def namespaces(user: bool = False) -> list[str]:
    # not --unshare-all: run by root it implies --unshare-user-try, and a user namespace maps the sandbox's uid to
    # root outside; without one, the sandbox's processes are an ordinary, unprivileged uid of the host. USER (userns
    # mode, not root): a user namespace too, the caller's uid mapped to itself
    return [*(["--unshare-user"] if user else []), "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session"]


def system_binds() -> list[str]:
    """/usr read-only, /bin /lib /lib64 ... as the host has them (merged-/usr symlinks on Debian 12), the loader's
    cache."""
    a = ["--ro-bind", "/usr", "/usr"]
    for link in ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"):
        if os.path.islink(link):
            a += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            a += ["--ro-bind", link, link]
    a += ["--perms", "0755", "--dir", "/etc"]
    if os.path.exists("/etc/ld.so.cache"):
        a += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    return a


def python_trees() -> list[str]:
    """The folders this Python needs outside /usr (the venv, the interpreter's installation), each resolved."""
    trees = set()
    for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))):
        p = os.path.realpath(p)
        if p.endswith("/bin"):
            p = os.path.dirname(p)
        if not (p == "/usr" or p.startswith("/usr/")):
            trees.add(p)
    return sorted(t for t in trees if not any(t.startswith(u + "/") for u in trees))


def python_libraries() -> list[str]:
    """The libpython this interpreter runs on (a Python built with --enable-shared), where it lies outside /usr and
    python_trees(): the interpreter finds it by its RUNPATH (pyenv's PREFIX/lib), which names a folder the sandbox
    does not show when the interpreter was copied out of its prefix, as an image's may be. Read from what this process
    has mapped (/proc/self/maps), not from sysconfig's build-time LIBDIR."""
    bound = ["/usr", *python_trees()]
    found = set()
    with contextlib.suppress(OSError), open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)  # address, perms, offset, device, inode, then the path if any
            path = fields[5].rstrip("\n") if len(fields) == 6 else ""
            if os.path.basename(path).startswith("libpython") and ".so" in os.path.basename(path) \
                    and not any(path.startswith(tree + "/") for tree in bound):
                found.add(path)
    return sorted(found)


def masked_dirs() -> list[str]:
    """Every copy of gradlab's package inside a folder the sandbox binds: the package this process runs, and any
    site-packages/gradlab or dist-packages/gradlab (an installed wheel holds the references; an editable install its
    data)."""
    bound = ["/usr", *python_trees()]
    found = {package_dir()}
    for tree in bound:
        for pattern in ("lib/python3*/site-packages/gradlab", "lib/python3*/dist-packages/gradlab",
                        "local/lib/python3*/site-packages/gradlab", "local/lib/python3*/dist-packages/gradlab",
                        "lib/python3/dist-packages/gradlab"):
            found.update(str(p) for p in Path(tree).glob(pattern))
    return sorted(d for d in found if os.path.isdir(d) and any(d.startswith(t + "/") for t in bound))


def memfd(data: bytes, name: str) -> int:
    fd = os.memfd_create(name, 0)  # no MFD_CLOEXEC: inherited by bwrap or stage 1, which read it
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _etc_files(uid: int) -> dict[str, bytes]:
    return {"/etc/passwd": f"root:x:0:0::/root:/usr/sbin/nologin\nsandbox:x:{uid}:{uid}::/box:/usr/sbin/nologin\n"
                           f"nobody:x:65534:65534::/nonexistent:/usr/sbin/nologin\n".encode(),
            "/etc/group": f"root:x:0:\nsandbox:x:{uid}:\nnogroup:x:65534:\n".encode(),
            "/etc/hosts": b"127.0.0.1 localhost sandbox\n::1 localhost\n",
            "/etc/nsswitch.conf": b"passwd: files\ngroup: files\nhosts: files\n"}  # no DNS: no resolv.conf at all


def bwrap_options(uid: int, limits: Limits, package: dict[str, str], fds: list[int], env: dict[str, str],
                  user: bool = False) -> list[str]:
    """bwrap's options (passed through --args, so the sandbox's /proc/1/cmdline shows none of them). Data files
    become memfds appended to FDS. USER: the userns mode (not root: a user namespace, UID the caller's own, no
    capability at all; stage 1 changes no uid)."""
    def data(content: bytes) -> str:
        fds.append(memfd(content, "gradlab-data"))
        return str(fds[-1])

    caps = [] if user else ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
    a = [*namespaces(user), "--cap-drop", "ALL", *caps, "--hostname", "sandbox"]  # what stage 1 needs, then drops
    a += system_binds()
    for path, content in _etc_files(uid).items():
        a += ["--perms", "0444", "--ro-bind-data", data(content), path]
    # the kernel's views and the private, bounded folders first: a Python installed under /tmp is bound over them
    a += ["--proc", "/proc", "--remount-ro", "/proc", "--dev", "/dev"]  # read-only: oom_score_adj stays 1000
    a += ["--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]
    a += ["--perms", "1777", "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm"]
    made: set[str] = {"/", "/etc", "/usr", "/proc", "/dev", "/tmp", "/dev/shm"}

    def parents(path: str) -> list[str]:  # bwrap, run by root, makes missing parents 0700: make them 0755 first
        out = []
        for p in reversed(Path(path).parents):
            if str(p) not in made:
                made.add(str(p))
                out += ["--perms", "0755", "--dir", str(p)]
        return out

    for tree in python_trees():
        a += [*parents(tree), "--ro-bind", tree, tree]
    for library in python_libraries():  # one file, read-only: the interpreter cannot start without it
        a += [*parents(library), "--ro-bind", library, library]
    for hidden in masked_dirs():
        a += ["--perms", "0700", "--tmpfs", hidden, "--remount-ro", hidden]
    a += [*parents(PKG), "--perms", "0755", "--size", str(1 << 20), "--tmpfs", PKG]
    made.add(PKG)
    for rel, src in sorted(package.items()):  # one file at a time: nothing else of gradlab's is in the sandbox
        # its bytes, readable by the sandbox's uid (as the uid fallback's copies are): gradlab's package and a
        # course's folder are kept unreadable to other users (chmod -R o-rwx), which a bind of the file would keep
        a += [*parents(f"{PKG}/{rel}"), "--perms", "0444", "--ro-bind-data", data(Path(src).read_bytes()),
              f"{PKG}/{rel}"]
    for stub in init_stubs(package):
        a += [*parents(f"{PKG}/{stub}"), "--perms", "0444", "--ro-bind-data", data(b""), f"{PKG}/{stub}"]
    a += ["--remount-ro", PKG]
    a += ["--perms", "1777", "--size", str(limits.box_bytes), "--tmpfs", BOX, "--chdir", BOX, "--clearenv"]
    for k, v in env.items():
        a += ["--setenv", k, v]
    return a


def init_stubs(package: dict[str, str]) -> list[str]:
    """An empty __init__.py for every package folder that PACKAGE's files lie in and that has none of its own."""
    dirs = {str(Path(rel).parent) for rel in package if "/" in rel}
    for d in list(dirs):
        while "/" in d:
            d = str(Path(d).parent)
            dirs.add(d)
    return sorted(f"{d}/__init__.py" for d in dirs if f"{d}/__init__.py" not in package)


def stage1_command(uid: int | None, limits: Limits, keep_fds: list[int], pkg: str, cgroup_fds: list[int]) -> list[str]:
    """Stage 1's command line; UID None (userns): it keeps the caller's uid, and RLIMIT_NPROC, set inside the new
    user namespace, counts that namespace's tasks alone."""
    spec = {"uid": uid, "gid": uid, "keep_fds": keep_fds, "cgroup_fds": cgroup_fds, "rlimits": {
        "CORE": 0, "AS": limits.memory, "FSIZE": limits.fsize, "NOFILE": limits.nofile, "NPROC": limits.nproc,
        # CPU seconds per process: an orphan that outlives a gradlab killed mid-check (uid mode) stops burning
        "CPU": int(limits.timeout_s + STARTUP_S) + 10}}
    return [sys.executable, "-I", "-S", f"{pkg}/gradlab/practice/inside/stage1.py", json.dumps(spec)]
