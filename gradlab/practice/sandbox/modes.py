"""Where a submission runs, and what it can reach: the isolation under `gradlab check`.

A course grades other people's code as root (Gradescope runs its autograder as root; so does a teacher's CI), so the
submission's process must not be able to write anything gradlab reads or imports, see or signal gradlab or the
other submissions, outlive its check, reach the network, or use more than a bounded number of processes, disk and
time. Four modes; detect() picks the strongest this machine allows, once per process:

  bwrap  root, bubblewrap installed, namespaces allowed (Debian, Ubuntu, CI runners): the submission runs in new
         mount, pid, network, ipc and uts namespaces (no user namespace: run by root, one would map the sandbox's
         uid to root outside). Its root filesystem is read-only binds only (/usr, the Python installation, the venv
         with gradlab's package masked), a few synthetic /etc files, the child's own files bound one by one, and
         size-limited tmpfs for /tmp, /dev/shm and its working folder /box. It sees only its own processes, has only
         a private loopback, and dies with gradlab (--die-with-parent) or when its time is up (the whole pid
         namespace goes with its init).
  uid    root, namespaces refused (Docker's default seccomp profile, so probably Gradescope): the same stage 1 without
         namespaces. The submission runs under a uid of its own (one per concurrent sandbox), with RLIMIT_NPROC, and
         every process of that uid is killed afterwards; the harness opens the loopback connections an exercise
         needs, then no new socket can be made (seccomp). It does NOT bound disk (what it writes in world-writable
         folders is removed afterwards) and cannot hide /proc (other processes' command lines are visible).
  userns not root, on Linux where `bwrap --unshare-user` works (the kernel allows unprivileged user namespaces: a
         teacher's laptop): bwrap's sandbox as above, in a user namespace of its own too, run as the caller's own uid
         (mapped to itself: no uid of its own, no capability inside). What root mode gets from a uid and a cgroup of
         its own: processes, RLIMIT_NPROC set inside the new user namespace, which counts that namespace's tasks
         alone where detect() finds the kernel counts it so (NPROC_PROBE; tests/test_userns.py measures it with the
         same uid running more processes outside), and the pid namespace, whose init takes every process with it;
         memory, CPU and processes as a whole from a cgroup where the caller's cgroup v2 folder is delegated to it
         (cgroups.available()), else memory (RLIMIT_AS) and CPU time (RLIMIT_CPU) per process only, and one sandbox
         at a time (pool.at_once()); files, the tmpfs sizes. What it can read is what bwrap binds, read-only: the
         caller's other files (gradlab's references, the class) are not there.
  plain  anything else (not root without bubblewrap or user namespaces, macOS, Windows): a child process as the
         caller, with a time limit, and on POSIX a memory limit, a file size limit and its own process group. Fine for
         checking one's own code; gradlab refuses to write a course's files (--junit, --gradescope, a folder) from it.

In the isolated modes, stage 1 (gradlab/practice/inside/stage1.py) sets the rlimits, drops to the sandbox's uid
(UID_BASE +
slot, a slot held by an flock across gradlab processes; userns: keeps the caller's), empties every capability set,
sets no_new_privs and a seccomp filter (gradlab/kit/seccomp.py), then execs the child. Inputs arrive on a memfd;
outputs and printed text leave through pipes that gradlab drains and caps. Every string that comes out (errors,
tracebacks, printed text, file names) goes through gradlab.kit.text.sanitize() before a terminal, JUnit or Gradescope
sees it.

GRADLAB_SANDBOX=plain|userns|uid|bwrap caps the mode (tests use it to check what happens without isolation): plain
none; uid (root) no namespaces; userns (not root) the user-namespace mode, and as root nothing (plain); bwrap any. It
never gives more isolation than the machine allows.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from gradlab.errors import GradlabError
from gradlab.kit.text import sanitize
from gradlab.practice.sandbox import bwrap, cgroups, slots
from gradlab.practice.sandbox.limits import Limits, package_dir

MODES = ("plain", "userns", "uid", "bwrap")  # what GRADLAB_SANDBOX may name (userns: not root only)


# ------------------------------------------------------------------------------------------------------- detection

@dataclass(frozen=True)
class Detected:
    mode: str  # plain | userns | uid | bwrap
    why: str  # why not a stronger one ("" for bwrap)

    @property
    def isolated(self) -> bool:
        return self.mode != "plain"


def detect() -> Detected:
    """The strongest mode this machine allows (cached per process and per GRADLAB_SANDBOX): as root, bwrap when the
    sandbox's own bwrap options run `true` (about 5 ms), else uid when a sandbox uid can run this Python but not read
    gradlab's package; not root, userns when the same options with --unshare-user run `true`; else plain."""
    return detect_capped(os.environ.get("GRADLAB_SANDBOX", "auto"))


@functools.cache
def detect_capped(cap: str) -> Detected:
    if cap not in (*MODES, "auto"):
        return Detected("plain", f"GRADLAB_SANDBOX={cap!r} is not one of {', '.join(MODES)}")
    if cap == "plain":
        return Detected("plain", "GRADLAB_SANDBOX=plain")
    if not sys.platform.startswith("linux"):
        return Detected("plain", f"not Linux ({sys.platform})")
    if os.geteuid() != 0:
        return _detect_userns(cap)
    if cap == "userns":
        return Detected("plain", "GRADLAB_SANDBOX=userns, and gradlab runs as root (userns is for other users)")
    problem = lock_dir_problem()
    if problem:
        return Detected("plain", problem)
    why = "GRADLAB_SANDBOX=uid" if cap == "uid" else "no bwrap on PATH"
    if cap != "uid" and shutil.which("bwrap"):
        try:
            r = subprocess.run(["bwrap", *bwrap.namespaces(), *bwrap.system_binds(), "--proc", "/proc", "--dev", "/dev",
                                "--size", "1048576", "--tmpfs", "/tmp", "/usr/bin/true"], capture_output=True,
                               timeout=20, stdin=subprocess.DEVNULL)
            if r.returncode == 0:
                return Detected("bwrap", "")
            why = "bwrap failed: " + " ".join(r.stderr.decode(errors="replace").split())[:200]
        except (OSError, subprocess.TimeoutExpired) as e:
            why = f"bwrap failed: {e}"
    problem = uid_mode_problem()
    return Detected("plain", f"{why}; {problem}") if problem else Detected("uid", why)


def _detect_userns(cap: str) -> Detected:
    """Not root: the userns mode where bubblewrap can make a user namespace, as the caller, with the sandbox's own
    namespaces (a kernel or an AppArmor policy may refuse unprivileged user namespaces: the probe says), and where
    RLIMIT_NPROC set inside it counts that namespace's tasks alone (NPROC_PROBE; else a sandbox's processes could not
    be bounded, and the teacher's own would count against it)."""
    if cap == "uid":
        return Detected("plain", "GRADLAB_SANDBOX=uid, and the uid fallback needs root")
    if not shutil.which("bwrap"):
        return Detected("plain", "not root, and no bwrap on PATH")
    binds = [a for path in (*bwrap.python_trees(), *bwrap.python_libraries()) for a in ("--ro-bind", path, path)]
    try:
        r = subprocess.run(["bwrap", *bwrap.namespaces(user=True), *bwrap.system_binds(), "--proc", "/proc",
                            "--dev", "/dev",
                            "--size", "1048576", "--tmpfs", "/tmp", *binds, sys.executable, "-I", "-S", "-c",
                            NPROC_PROBE], capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return Detected("plain", f"not root, and bwrap --unshare-user failed: {e}")
    said = " ".join(r.stderr.decode(errors="replace").split())[:200]
    if r.stdout.strip() == b"per user":
        return Detected("plain", "not root, and this kernel counts RLIMIT_NPROC per user, not per user namespace"
                                 ": a sandbox's processes cannot be bounded without a uid of its own")
    if r.returncode != 0 or r.stdout.strip() != b"per namespace":
        return Detected("plain", f"not root, and bwrap --unshare-user failed: {said}")
    return Detected("userns", "not root")


# In a new user namespace (its init, bwrap's, and this process: 2 tasks), RLIMIT_NPROC 3 lets one fork through when the
# kernel counts the namespace's tasks alone, and none when it counts every process of the uid (gradlab, bwrap and the
# init at least, outside).
NPROC_PROBE = """import os, resource
resource.setrlimit(resource.RLIMIT_NPROC, (3, 3))
try:
    pid = os.fork()
except BlockingIOError:
    print("per user")
else:
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    print("per namespace")
"""


def not_isolated_message(found: Detected | None = None, limits: Limits | None = None) -> str | None:
    """One line on what the mode leaves open and how to get full isolation; None in bwrap mode with a cgroup per
    sandbox. LIMITS: a sandbox's (gradlab.practice.sandbox.capacity.limits()), for the figures the userns line gives."""
    found = found or detect()
    cgroup, why_not = cgroups.available() if found.isolated else ("", "")
    unbounded = "" if cgroup or not found.isolated else (f"; no cgroup here ({why_not}): a sandbox's processes "
                                                         "together are bounded in neither memory nor CPU")
    if found.mode == "bwrap":
        return f"submissions run in bubblewrap{unbounded}" if unbounded else None
    if found.mode == "userns":
        return userns_message(cgroup, why_not, limits)
    install = ("run gradlab as root with bubblewrap installed (apt-get install bubblewrap) where namespaces are "
               "allowed (Docker: --cap-add SYS_ADMIN --security-opt seccomp=unconfined)")
    if found.mode == "uid":
        return (f"submissions run under a uid of their own with limits and seccomp, but no namespaces here "
                f"({found.why}): they can see other processes and fill the disk{unbounded}; for full isolation "
                f"{install}")
    if os.name == "posix" and os.geteuid() != 0 and sys.platform.startswith("linux"):
        install = ("install bubblewrap (apt-get install bubblewrap) where the kernel allows unprivileged user "
                   "namespaces, or run gradlab as root with it")
    return f"submissions run unisolated ({found.why}); to isolate them {install}"


def userns_message(cgroup: str, why_not: str, limits: Limits | None = None) -> str:
    """The userns mode in one line: what holds for a sandbox as a whole, and what per process only."""
    limits = limits or Limits()
    start = ("submissions run in bubblewrap in a user namespace of their own, as you (not root): they see only what is "
             "bound in, read-only, and their own processes, and have no network; ")
    if cgroup:
        return start + (f"a cgroup bounds each sandbox as a whole ({limits.group_memory >> 30} GB of memory, "
                        f"{limits.cpus:g} CPU{'' if limits.cpus == 1 else 's'}, {limits.nproc} processes and threads)")
    return start + (f"no cgroup here ({why_not}): each sandbox is bounded as a whole in processes and threads "
                    f"({limits.nproc}, counted in its user namespace), files (tmpfs) and time, but in memory "
                    f"({limits.memory >> 30} GB) and CPU time only per process, so they run one at a time; for a "
                    "cgroup per sandbox run gradlab where your cgroup v2 folder is delegated to you, or as root with "
                    "bubblewrap")


def uid_mode_problem() -> str | None:
    """Why the fallback cannot run here, as the fix to apply: a sandbox uid must be able to run this Python and find
    torch, and must NOT be able to read gradlab's package (the references), nor another copy on this Python's path
    (an editable install's checkout)."""
    probe = slots.UID_BASE + slots.SLOTS  # a uid no sandbox uses
    copies = [package_dir(), *(os.path.join(p, "gradlab") for p in sys.path if p and os.path.isdir(os.path.join(
        p, "gradlab", "practice")) and os.path.realpath(os.path.join(p, "gradlab")) != os.path.realpath(package_dir()))]
    code = ("import os, sys, importlib.util as u; print('ok' if u.find_spec('torch') else 'no torch'); "
            "print(next((d for d in sys.argv[1:] if os.access(d, os.R_OK) or os.access(d, os.X_OK)), '-'))")
    try:
        r = subprocess.run([sys.executable, "-I", "-c", code, *copies], capture_output=True, text=True,
                           user=probe, group=probe, extra_groups=[], timeout=60, cwd="/", stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        r = None
    lines = r.stdout.split() if r else []
    if r is None or r.returncode != 0 or not lines or lines[0] != "ok":
        paths = [Path(sys.executable), Path(os.path.realpath(sys.executable))]
        blocker = next((str(p) for x in paths for p in reversed(x.parents) if p.is_dir()
                        and not os.stat(p).st_mode & 0o001), None)
        return (f"other users cannot run {sys.executable}" + (f" ({blocker} is not searchable: chmod o+x {blocker})"
                if blocker else "") + " or find torch with it")
    if lines[1:] != ["-"]:
        readable = " ".join(lines[1:])
        return (f"gradlab's package {readable} is readable by other users, so a submission could read the "
                f"references: chmod -R o-rwx {readable}")
    return None


def readable_by_sandbox(folders: list[str]) -> str | None:
    """The first of FOLDERS, or of the files and folders in them, that a sandbox uid could read (a class's
    submissions, the wheel beside a course file: the uid fallback has no mount namespace to hide them), or None."""
    paths = []
    for folder in folders:
        with contextlib.suppress(OSError):
            paths += [folder, *(os.path.join(folder, n) for n in sorted(os.listdir(folder)))]
    code = "import os, sys; print(next((p for p in sys.argv[1:] if os.access(p, os.R_OK)), '-'))"
    r = subprocess.run([sys.executable, "-I", "-S", "-c", code, *paths], capture_output=True, text=True,
                       user=slots.UID_BASE + slots.SLOTS, group=slots.UID_BASE + slots.SLOTS, extra_groups=[],
                       timeout=60, cwd="/",
                       stdin=subprocess.DEVNULL)
    found = r.stdout.strip()
    return None if r.returncode == 0 and found == "-" else found or "(the check itself failed)"


def lock_dir_problem() -> str | None:
    try:
        slots.LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(slots.LOCK_DIR)
    except OSError as e:
        return f"cannot make {slots.LOCK_DIR}: {e.strerror}"
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0:
        return f"{slots.LOCK_DIR} is not a folder owned by root"
    os.chmod(slots.LOCK_DIR, 0o700)
    return None


def for_others_code(doing: str, folders: list[str]) -> Detected:
    """The one rule for running other people's code (a course's check, a class's grading): this machine's mode, or
    one line and nothing written when submissions would run unisolated, or (the uid fallback: no mount namespace)
    when one of FOLDERS (the submissions, the course's folder, the output), or a file in it, is readable by a sandbox
    uid: a submission could copy a classmate's file, the course's checks or the feedback. DOING says what the user
    asked for ("grading a class")."""
    found = detect()
    if not found.isolated:
        raise GradlabError(f"{doing} runs other people's code, and {not_isolated_message(found)}; nothing was written")
    if found.mode == "uid" and (readable := readable_by_sandbox(folders)):
        raise GradlabError(f"{sanitize(readable)} is readable by other users, so a submission could copy it (a "
                           "classmate's file, the course's checks, the feedback): chmod o-rwx it and its folder; "
                           "nothing was written")
    return found
