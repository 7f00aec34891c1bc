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
import json
import math
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from gradlab.practice.sandbox import cgroups

MODES = ("plain", "userns", "uid", "bwrap")  # what GRADLAB_SANDBOX may name (userns: not root only)
UID_BASE = int(os.environ.get("GRADLAB_SANDBOX_UID_BASE", "1600000"))  # sandbox uids: UID_BASE + slot
SLOTS = 32  # concurrent sandboxes on one machine (across gradlab processes)
LOCK_DIR = Path(os.environ.get("GRADLAB_SANDBOX_LOCKS", "/run/gradlab-sandbox"))
PKG, BOX = "/opt/gradlab-child", "/box"  # in the bwrap sandbox: gradlab's files for the child, the working folder
START = b"S"  # the child's first byte out: the submission's own code starts now, and its time limit with it
SANDBOX_OOM_SCORE_ADJ, GRADLAB_OOM_SCORE_ADJ = 1000, -500  # the OOM killer takes a sandbox first, gradlab last
STARTUP_S = 90.0  # how long the child may take to get there (torch's import, the harness's prepare) on a busy machine


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 20.0
    memory: int = 4 << 30  # RLIMIT_AS of each process (torch's import alone maps about 3.3 GB of a CUDA build)
    nproc: int = 96  # RLIMIT_NPROC: tasks (processes and threads) of the sandbox's uid; gloo with 3 workers needs 32
    fsize: int = 64 << 20  # RLIMIT_FSIZE: any one file
    nofile: int = 256
    tmp_bytes: int = 64 << 20  # bwrap: tmpfs /tmp
    shm_bytes: int = 64 << 20  # bwrap: tmpfs /dev/shm (multiprocessing's semaphores live there)
    box_bytes: int = 16 << 20  # bwrap: tmpfs /box, the working folder
    printed_kept: int = 16 << 10  # bytes of stdout + stderr kept: the last ones
    printed_max: int = 64 << 20  # printing more stops the run
    output_max: int = 64 << 20  # bytes of the result (gradlab/practice/inside/wire.py) accepted
    group_memory: int = 2 << 30  # the cgroup: memory of all the sandbox's processes together (measured: a gloo
    cpus: float = 2.0  # exercise's four processes, torch imported, 330 MB at most), and the CPUs they may use together


@dataclass
class Outcome:
    mode: str
    returncode: int | None
    stopped: str | None = None  # why gradlab stopped it: "timeout", "startup" (the child never started the
    # submission's code within STARTUP_S: a busy machine), "printed too much", "output too large"
    printed: bytes = b""  # the last Limits.printed_kept bytes of stdout + stderr
    printed_bytes: int = 0
    output: bytes | None = None
    wall_s: float = 0.0
    uid: int | None = None
    leftovers: list[int] = field(default_factory=list)  # pids of the sandbox's uid still alive after cleanup
    cgroup: str = ""  # "v1" | "v2": the sandbox ran in a cgroup of its own; "": it did not (cgroups.available())
    memory_peak: int | None = None  # bytes: the most its processes held together (cgroup)


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
    return _detect(os.environ.get("GRADLAB_SANDBOX", "auto"))


@functools.cache
def _detect(cap: str) -> Detected:
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
    problem = _lock_dir_problem()
    if problem:
        return Detected("plain", problem)
    why = "GRADLAB_SANDBOX=uid" if cap == "uid" else "no bwrap on PATH"
    if cap != "uid" and shutil.which("bwrap"):
        try:
            r = subprocess.run(["bwrap", *_namespaces(), *_system_binds(), "--proc", "/proc", "--dev", "/dev",
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
    binds = [a for tree in python_trees() for a in ("--ro-bind", tree, tree)]
    try:
        r = subprocess.run(["bwrap", *_namespaces(user=True), *_system_binds(), "--proc", "/proc", "--dev", "/dev",
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
    probe = UID_BASE + SLOTS  # a uid no sandbox uses
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
                       user=UID_BASE + SLOTS, group=UID_BASE + SLOTS, extra_groups=[], timeout=60, cwd="/",
                       stdin=subprocess.DEVNULL)
    found = r.stdout.strip()
    return None if r.returncode == 0 and found == "-" else found or "(the check itself failed)"


def package_dir() -> str:
    """The folder of the gradlab package this process runs."""
    return str(Path(__file__).resolve().parent.parent.parent)


def _lock_dir_problem() -> str | None:
    try:
        LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(LOCK_DIR)
    except OSError as e:
        return f"cannot make {LOCK_DIR}: {e.strerror}"
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0:
        return f"{LOCK_DIR} is not a folder owned by root"
    os.chmod(LOCK_DIR, 0o700)
    return None


# ----------------------------------------------------------------------------------------------------- uid slots

class Slot:
    """A sandbox uid of its own for one run: an flock on LOCK_DIR/slot-N (a root-only folder), held across gradlab
    processes, so two concurrent sandboxes (a folder's two workers, two CI jobs) never share a uid: RLIMIT_NPROC,
    kill(-1) and the /proc scans count per uid. The lock is checked after flock to be the file LOCK_DIR names (not
    one unlinked meanwhile). slot-N.used stands while a run's cleanup is not done: the next to take the slot (its
    owner is dead: the flock is free) cleans up first, and skips the uid if that fails; a uid never runs two
    submissions' code with the first one's leftovers."""

    def __init__(self, mode: str) -> None:
        import fcntl  # POSIX only: isolate.py also runs, in plain mode, on Windows

        for n in range(SLOTS):
            path = LOCK_DIR / f"slot-{n}"
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held, named = os.fstat(fd), os.stat(path, follow_symlinks=False)
                if (held.st_dev, held.st_ino) != (named.st_dev, named.st_ino):
                    raise BlockingIOError  # unlinked and made again by another process: not the lock others see
            except (BlockingIOError, FileNotFoundError):
                os.close(fd)
                continue
            self.fd, self.uid, self.used = fd, UID_BASE + n, LOCK_DIR / f"slot-{n}.used"
            if self.used.exists() and (mode != "uid" or not recover(self.uid)):
                os.close(fd)
                continue
            if mode == "uid":  # bwrap leaves nothing on the machine but processes (killed by the next run)
                self.used.write_text(f"{os.getpid()}\n")
            return
        raise RuntimeError(f"all {SLOTS} sandbox slots are busy, or their uid's leftovers could not be removed "
                           f"(remove {LOCK_DIR}/slot-*.used once they are)")

    def release(self, cleaned: bool) -> None:
        """CLEANED: every process and file of the uid is gone (else the next to take the slot tries again)."""
        if cleaned:
            self.used.unlink(missing_ok=True)
        os.close(self.fd)


def recover(uid: int) -> bool:
    """What a run on UID that did not finish left (its gradlab killed mid-check): its processes, its working folders,
    its files in SHARED_TMP. Whether all of it went."""
    kill_uid(uid)
    stale = sorted(Path(tempfile.gettempdir()).glob(f"gradlab-box-{uid}-*"))
    if not clean_as_uid(uid, (*(str(w / "box") for w in stale), *SHARED_TMP)):
        return False
    for work in stale:  # what is left is root's (pkg/) and the emptied box/: nothing of the uid's to race
        shutil.rmtree(work, ignore_errors=True)
    return True


def is_sandbox_uid(uid: int) -> bool:
    return UID_BASE <= uid < UID_BASE + SLOTS


def pids_of_uid(uid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    found.append(int(entry))
    return found


def kill_uid(uid: int, rounds: int = 50) -> list[int]:
    """SIGKILL every process of UID: /bin/sh running as UID (any uid can run it, unlike a Python under /root) calls
    kill(-1, SIGKILL), which the kernel delivers to every process that uid may signal under the tasklist lock (a fork
    in flight cannot slip past it); /proc is scanned to confirm. Returns what is left (should be [])."""
    for _ in range(rounds):
        if not pids_of_uid(uid):
            return []
        subprocess.run(["/bin/sh", "-c", "kill -9 -1"], user=uid, group=uid, extra_groups=[], cwd="/",
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.02)
    return pids_of_uid(uid)


SHARED_TMP = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")  # where any uid may write (the uid fallback)
# Run AS the sandbox's uid, never as root: whatever a race makes it remove (a folder swapped for a link by another
# sandbox), it removes with that uid's rights, which the submission had anyway. Iterative, by chdir into each folder
# (no path grows, no recursion: a 1,200-deep chain is walked like a flat one). In a folder of its own it removes
# anything it can (another uid's file, an empty folder), and names what it cannot: another uid's closed folder, planted
# there by a sandbox running at the same time (clean_as_uid has that uid empty it). Prints {"left": how many entries
# it could not remove, "foreign": [[uid, path], ...]}.
CLEANUP = r"""
import json, os, stat, sys
uid, done, left, foreign = os.getuid(), set(), 0, []
def own_or_open(st):
    return st.st_uid == uid or st.st_mode & 0o002
def gone(name, st, mine):
    global left
    try:
        os.rmdir(name)
        return
    except OSError:
        left += 1
    if mine and st.st_uid != uid:  # another uid's folder in one of ours: that uid can empty it
        try:
            foreign.append([st.st_uid, os.path.join(os.getcwd(), name)])
        except OSError:
            pass
for root in sys.argv[1:]:
    try:
        if os.lstat(root).st_uid == uid:
            os.chmod(root, 0o711, follow_symlinks=False)
        os.chdir(root)
    except FileNotFoundError:
        continue
    except OSError:
        left += 1
        continue
    path = []  # the names walked down from ROOT
    while True:
        here = os.stat(".")
        mine = here.st_uid == uid  # a folder of ours (0711 once entered: the uid whose plant it holds can reach it)
        down = None
        try:
            entries = list(os.scandir("."))
        except OSError:
            entries = []
            left += 1
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    if own_or_open(st) and (st.st_dev, st.st_ino) not in done:
                        if st.st_uid == uid:
                            os.chmod(e.name, 0o711, follow_symlinks=False)
                        down = e.name
                        break
                    if mine and (st.st_dev, st.st_ino) not in done:
                        done.add((st.st_dev, st.st_ino))
                        gone(e.name, st, mine)
                elif st.st_uid == uid or mine:
                    os.unlink(e.name)
            except OSError:
                left += 1
        if down is not None:
            try:
                os.chdir(down)  # follows a link swapped in since: harmless, as this uid
                path.append(down)
                continue
            except OSError:
                left += 1
        done.add((here.st_dev, here.st_ino))
        if not path:
            break
        os.chdir("..")
        name = path.pop()
        try:
            st = os.lstat(name)
            if st.st_uid == uid or os.stat(".").st_uid == uid:
                gone(name, st, os.stat(".").st_uid == uid)
        except OSError:
            left += 1
print(json.dumps({"left": left, "foreign": foreign}))
"""


def clean_as_uid(uid: int, roots: tuple[str, ...] = SHARED_TMP, timeout_s: float = 60.0) -> bool:
    """Remove what UID left in ROOTS, run as UID (after every process of it is dead): whether all of it went. A
    closed folder another sandbox uid made inside one of UID's (the uid fallback has one /tmp for all: a sandbox
    running beside this one may plant it there to make this cleanup fail) is emptied as that uid, then removed."""
    found = _cleanup(uid, roots, timeout_s)
    for _ in range(3):
        if found is None or not found["foreign"]:
            break
        for owner, path in found["foreign"]:
            if isinstance(owner, int) and is_sandbox_uid(owner) and owner != uid and isinstance(path, str):
                _cleanup(owner, (path,), timeout_s)
        found = _cleanup(uid, roots, timeout_s)
    return found is not None and found["left"] == 0 and not kill_uid(uid)


def _cleanup(uid: int, roots: tuple[str, ...], timeout_s: float) -> dict | None:
    """CLEANUP run as UID over ROOTS: what it printed, or None when it could not run."""
    for python in dict.fromkeys([sys.executable, "/usr/bin/python3"]):  # one the uid can run (the uid fallback
        try:  # checks it can run sys.executable; bwrap's recovery may run where it cannot)
            r = subprocess.run([python, "-I", "-S", "-c", CLEANUP, *roots], user=uid, group=uid, extra_groups=[],
                               cwd="/", stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout_s,
                               env={"PATH": "/usr/bin:/bin"})
        except PermissionError:
            continue
        except (OSError, subprocess.SubprocessError):
            return None
        try:
            found = json.loads(r.stdout)
        except ValueError:
            return None
        ok = r.returncode == 0 and isinstance(found, dict) and isinstance(found.get("left"), int)
        return {"left": found["left"], "foreign": list(found.get("foreign") or [])} if ok else None
    return None


# -------------------------------------------------------------------------------------------------- the bwrap argv

def _namespaces(user: bool = False) -> list[str]:
    # not --unshare-all: run by root it implies --unshare-user-try, and a user namespace maps the sandbox's uid to
    # root outside; without one, the sandbox's processes are an ordinary, unprivileged uid of the host. USER (userns
    # mode, not root): a user namespace too, the caller's uid mapped to itself
    return [*(["--unshare-user"] if user else []), "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session"]


def _system_binds() -> list[str]:
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


def _memfd(data: bytes, name: str) -> int:
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
        fds.append(_memfd(content, "gradlab-data"))
        return str(fds[-1])

    caps = [] if user else ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
    a = [*_namespaces(user), "--cap-drop", "ALL", *caps, "--hostname", "sandbox"]  # what stage 1 needs, then drops
    a += _system_binds()
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


def _stage1(uid: int | None, limits: Limits, keep_fds: list[int], pkg: str, cgroup_fds: list[int]) -> list[str]:
    """Stage 1's command line; UID None (userns): it keeps the caller's uid, and RLIMIT_NPROC, set inside the new
    user namespace, counts that namespace's tasks alone."""
    spec = {"uid": uid, "gid": uid, "keep_fds": keep_fds, "cgroup_fds": cgroup_fds, "rlimits": {
        "CORE": 0, "AS": limits.memory, "FSIZE": limits.fsize, "NOFILE": limits.nofile, "NPROC": limits.nproc,
        # CPU seconds per process: an orphan that outlives a gradlab killed mid-check (uid mode) stops burning
        "CPU": int(limits.timeout_s + STARTUP_S) + 10}}
    return [sys.executable, "-I", "-S", f"{pkg}/gradlab/practice/inside/stage1.py", json.dumps(spec)]


# ------------------------------------------------------------------------------------------------------------- run

_LIVE: dict[int, object] = {}  # run()s in progress: their kill_all, so that stop_all() can end them from any thread
_LIVE_LOCK = threading.Lock()
_STOPPING = threading.Event()


def stop_all() -> None:
    """Kill every sandbox this process runs, and start no new one (Ctrl-C or SIGTERM on a class's folder: gradlab
    writes what was graded and leaves at once, its sandboxes with it)."""
    _STOPPING.set()
    with _LIVE_LOCK:
        kills = list(_LIVE.values())
    for kill in kills:
        with contextlib.suppress(Exception):
            kill()


class _Reader(threading.Thread):
    """Drains a pipe: keeps the first KEEP bytes (or, TAIL, the last KEEP), counts them all, notes when the first
    arrived, and calls TOO_MUCH once past MOST."""

    def __init__(self, stream, keep: int, most: int, too_much, tail: bool = False) -> None:
        super().__init__(daemon=True)
        self.stream, self.keep, self.most, self.too_much, self.tail = stream, keep, most, too_much, tail
        self.data, self.total, self.first_at = bytearray(), 0, None

    def run(self) -> None:
        with self.stream as f:
            while chunk := f.read(1 << 16):
                if self.first_at is None:
                    self.first_at = time.monotonic()
                self.total += len(chunk)
                if self.tail:
                    self.data += chunk
                    if len(self.data) > 2 * self.keep:
                        del self.data[:-self.keep]
                elif len(self.data) < self.keep:
                    self.data += chunk[: self.keep - len(self.data)]
                if self.total > self.most:
                    self.too_much()
                    return

    def kept(self) -> bytes:
        return bytes(self.data[-self.keep:] if self.tail else self.data)


def run(command: list[str], *, package: dict[str, str], inputs: bytes, limits: Limits = Limits(),
        env: dict[str, str] | None = None, mode: str | None = None) -> Outcome:
    """Run COMMAND in MODE (default: detect()). "{pkg}" in COMMAND is the folder holding PACKAGE's files ({relative
    path: the file to copy or bind}), with an empty __init__.py in each package folder lacking one: the only code of
    gradlab's the process gets. INPUTS reach it through $GRADLAB_IN ("fd:N" or a path); what it writes to
    $GRADLAB_OUT comes back as Outcome.output; stdout and stderr come back cut to their last bytes."""
    mode = mode or detect().mode
    if _STOPPING.is_set():
        raise RuntimeError("gradlab is stopping: no new sandbox is started")
    started = time.monotonic()
    slot = Slot(mode) if mode in ("uid", "bwrap") else None  # userns: the caller's uid, no slot
    uid = slot.uid if slot else None
    fds: list[int] = []  # what the process inherits, closed here once it started
    state: dict = {"stopped": None, "proc": None, "group": None, "work": None, "cleaned": False}
    try:
        group = state["group"] = _group(limits) if mode != "plain" else None
        group_fds = group.procs_fds() if group else []
        fds += group_fds
        out_r, out_w = os.pipe() if os.name == "posix" else (None, None)
        if out_w is not None:
            os.set_inheritable(out_w, True)
            fds.append(out_w)
        if uid is not None:
            kill_uid(uid)  # leftovers of a gradlab that crashed: they would count against RLIMIT_NPROC
        launch = _launch(mode, command, uid=uid, limits=limits, package=package, inputs=inputs, env=env or {},
                         out_w=out_w, fds=fds, group_fds=group_fds)
        state["work"] = launch.work
        proc = state["proc"] = subprocess.Popen(
            launch.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=launch.env,
            cwd=launch.cwd, pass_fds=fds, start_new_session=launch.new_session,
            preexec_fn=_plain_limits(limits) if mode == "plain" and os.name == "posix" else None)
        for fd in fds:
            os.close(fd)
        fds.clear()
        kill_all = functools.partial(_kill_all, proc, mode, uid)
        with _LIVE_LOCK:
            _LIVE[id(state)] = kill_all
        readers = _readers(proc, out_r, limits, state, kill_all)
        _watch(proc, readers[-1] if out_r is not None else None, limits, started, state)
        kill_all()  # whatever it left behind (daemons, workers) dies with it
        proc.wait()
        for r in readers:
            r.join(5)
        output = readers[1].kept() if out_r is not None else _output_file(launch.out_file, limits)
        output = output[1:] if output[:1] == START else b""
        leftovers, peak = _clean_up(mode, uid, group, launch.work, state)
        return Outcome(mode=mode, returncode=proc.returncode, stopped=state["stopped"], printed=readers[0].kept(),
                       printed_bytes=readers[0].total, output=None if state["stopped"] else output,
                       wall_s=time.monotonic() - started, uid=uid, leftovers=leftovers,
                       cgroup=group.version if group else "", memory_peak=peak)
    finally:
        _release(state, fds, mode, slot)


def _clean_up(mode: str, uid: int | None, group, work: Path, state: dict) -> tuple[list, int | None]:
    """After the run: what it left running, killed (the uid's processes, then the cgroup, read for its memory peak
    before it goes), and whether everything it left is gone (state["cleaned"]). Returns (what was killed, the
    memory peak or None)."""
    leftovers = kill_uid(uid) if uid is not None else []
    peak = group.memory_peak() if group else None
    leftovers += group.remove() if group else []
    if mode == "uid":  # as the uid: what it wrote in its box and the machine's shared folders
        state["cleaned"] = clean_as_uid(uid, (str(work / "box"), *SHARED_TMP))
    else:
        state["cleaned"] = not leftovers
    return leftovers, peak


def _release(state: dict, fds: list[int], mode: str, slot: Slot | None) -> None:
    """What run() holds, let go whatever happened: the process, the fds, the cgroup, the folder, the slot."""
    with _LIVE_LOCK:
        _LIVE.pop(id(state), None)
    if state["proc"] is not None and state["proc"].poll() is None:  # an exception of our own midway
        _kill(state["proc"], mode)
        state["proc"].wait()
    for fd in fds:
        os.close(fd)
    if state["group"] is not None:
        state["group"].remove()
    if state["work"] is not None and (mode == "plain" or state["cleaned"]):  # else left to recover() (as the uid)
        shutil.rmtree(state["work"], ignore_errors=True)
    if slot:
        slot.release(cleaned=state["cleaned"])


@dataclass(kw_only=True)
class _Launch:
    cmd: list[str]
    env: dict[str, str]
    cwd: str
    new_session: bool  # its own session and process group (bwrap makes one itself)
    work: Path | None = None  # a folder of gradlab's for this run (uid, plain)
    out_file: Path | None = None  # where the outputs are written when no pipe can be passed (Windows)


def _launch(mode: str, command: list[str], *, uid: int | None, limits: Limits, package: dict[str, str],
            inputs: bytes, env: dict[str, str], out_w: int | None, fds: list[int], group_fds: list[int]) -> _Launch:
    """How COMMAND starts in MODE; the fds it must inherit are added to FDS. UID: the sandbox's (None: userns, the
    caller's own)."""
    base_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
                "PYTHONIOENCODING": "utf-8:backslashreplace", **env}
    if mode == "plain":
        return _launch_plain(command, package, inputs, base_env, out_w)
    in_fd = _memfd(inputs, "gradlab-inputs")
    fds.append(in_fd)
    base_env |= {"GRADLAB_IN": f"fd:{in_fd}", "GRADLAB_OUT": f"fd:{out_w}", "GLOO_SOCKET_IFNAME": "lo"}
    if mode in ("bwrap", "userns"):
        options = bwrap_options(uid if uid is not None else os.getuid(), limits, package, fds,
                                {**base_env, "HOME": BOX, "TMPDIR": "/tmp"}, user=mode == "userns")
        args_fd = _memfd(b"".join(s.encode() + b"\0" for s in options), "bwrap-args")
        fds.append(args_fd)
        launch = _Launch(cmd=["bwrap", "--args", str(args_fd), "--",
                              *_stage1(uid, limits, [in_fd, out_w], PKG, group_fds),
                              *(a.replace("{pkg}", PKG) for a in command)],
                         env={}, cwd="/", new_session=False)
    else:
        work = Path(tempfile.mkdtemp(prefix=f"gradlab-box-{uid}-"))  # root 0700 until filled
        pkg, box = work / "pkg", work / "box"
        _copy_package(package, pkg)
        box.mkdir(mode=0o700)
        (box / "tmp").mkdir(mode=0o700)
        for p in (box, box / "tmp"):
            os.chown(p, uid, uid)
        os.chmod(work, 0o711)  # others may pass through to pkg/, not list; box/ is the sandbox uid's alone
        launch = _Launch(cmd=[*_stage1(uid, limits, [in_fd, out_w], str(pkg), group_fds),
                              *(a.replace("{pkg}", str(pkg)) for a in command)],
                         env={**base_env, "HOME": str(box), "TMPDIR": str(box / "tmp"), "GRADLAB_SEAL_INET": "1"},
                         cwd=str(box), new_session=True, work=work)
    # the OOM killer's first choice, inherited by all of it (bwrap's /proc is read-only: it cannot lower it)
    launch.cmd = ["/bin/sh", "-c", f'echo {SANDBOX_OOM_SCORE_ADJ} > /proc/self/oom_score_adj && exec "$@"', "sh",
                  *launch.cmd]
    return launch


def _launch_plain(command: list[str], package: dict[str, str], inputs: bytes, base_env: dict[str, str],
                  out_w: int | None) -> _Launch:
    """As the caller, where it runs (a laptop; Windows too: no pipe to pass, a file instead)."""
    work = Path(tempfile.mkdtemp(prefix="gradlab-check-"))
    _copy_package(package, work / "pkg")
    (work / "in").write_bytes(inputs)
    out_file = None if out_w is not None else work / "out"
    popen_env = {**os.environ, **base_env, "GRADLAB_IN": str(work / "in"),
                 "GRADLAB_OUT": f"fd:{out_w}" if out_w is not None else str(out_file)}
    popen_env.pop("PYTHONPATH", None)
    return _Launch(cmd=[a.replace("{pkg}", str(work / "pkg")) for a in command], env=popen_env, cwd=str(work),
                   new_session=os.name == "posix", work=work, out_file=out_file)


def _kill_all(proc: subprocess.Popen, mode: str, uid: int | None) -> None:
    _kill(proc, mode)
    if uid is not None:
        kill_uid(uid)


def _readers(proc: subprocess.Popen, out_r: int | None, limits: Limits, state: dict, kill_all) -> list[_Reader]:
    """Threads draining stdout + stderr and, where there is one, the output pipe; either stops the run when it
    carries too much."""
    def too_much(why: str):
        def stop() -> None:
            if not state["stopped"]:
                state["stopped"] = why
                kill_all()
        return stop

    readers = [_Reader(proc.stdout, limits.printed_kept, limits.printed_max, too_much("printed too much"), True)]
    if out_r is not None:
        readers.append(_Reader(open(out_r, "rb", buffering=0), limits.output_max + 2,  # noqa: SIM115 (closed by
                               limits.output_max + 1, too_much("output too large")))  # the reader)
    for r in readers:
        r.start()
    return readers


def _watch(proc: subprocess.Popen, out: _Reader | None, limits: Limits, started: float, state: dict) -> None:
    """Wait for PROC within its time limit, which runs from the moment the submission's own code starts (the child
    says so with its first byte out, on OUT): torch's import on a busy machine is not the student's time; STARTUP_S
    caps it."""
    while True:
        started_at = out.first_at if out is not None else started
        if started_at is None:
            deadline, step = started + STARTUP_S + limits.timeout_s, 0.05
        else:
            deadline, step = started_at + limits.timeout_s, math.inf
        left = deadline - time.monotonic()
        if left <= 0:  # before the child's first byte: the machine was too slow to start it, not the student's code
            state["stopped"] = state["stopped"] or ("timeout" if started_at is not None else "startup")
            return
        if _wait(proc, min(left, step)):
            return


def _output_file(out_file: Path | None, limits: Limits) -> bytes:
    if out_file is None or not out_file.is_file() or out_file.stat().st_size > limits.output_max:
        return b""
    return out_file.read_bytes()


def _group(limits: Limits) -> cgroups.Group | None:
    """The sandbox's own cgroup where this machine allows one (cgroups.available()), else None; gradlab's own process
    is made the OOM killer's last choice (the sandbox's processes are its first: stage 1)."""
    if not cgroups.available()[0]:
        return None
    _protect_gradlab()
    return cgroups.Group(memory=limits.group_memory, pids=limits.nproc, cpus=limits.cpus)


@functools.cache
def _protect_gradlab() -> None:
    with contextlib.suppress(OSError):  # root only: lowering it needs CAP_SYS_RESOURCE
        Path("/proc/self/oom_score_adj").write_text(str(GRADLAB_OOM_SCORE_ADJ))


def _copy_package(package: dict[str, str], pkg: Path) -> None:
    pkg.mkdir(mode=0o755)
    for rel, src in package.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        shutil.copyfile(src, pkg / rel)
    for stub in init_stubs(package):
        (pkg / stub).write_bytes(b"")
    for p in [pkg, *pkg.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o444)


def _wait(proc: subprocess.Popen, timeout: float) -> bool:
    """Whether PROC ended within TIMEOUT. Popen.wait(timeout) polls with sleeps of up to 50 ms: a pidfd wakes at the
    exit itself."""
    if hasattr(os, "pidfd_open"):
        with contextlib.suppress(OSError):
            pidfd = os.pidfd_open(proc.pid)
            try:
                return bool(select.select([pidfd], [], [], timeout)[0])
            finally:
                os.close(pidfd)
    try:
        proc.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        return False


def _kill(proc: subprocess.Popen, mode: str) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
        if mode in ("bwrap", "userns"):  # the namespace's init first: the kernel kills all of the namespace with it,
            for pid in _children(proc.pid):  # and the outer bwrap reaps it (killing the outer one first leaves the
                os.kill(pid, signal.SIGKILL)  # init to the host's init to reap)
            proc.wait(1)
        elif mode == "plain" and os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.kill()


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _plain_limits(limits: Limits):
    def apply() -> None:  # in the child, before it runs anything (POSIX)
        import resource

        for name, value in (("AS", limits.memory), ("FSIZE", limits.fsize), ("CORE", 0)):
            with contextlib.suppress(ValueError, OSError):  # macOS refuses some of them
                resource.setrlimit(getattr(resource, "RLIMIT_" + name), (value, value))
    return apply
