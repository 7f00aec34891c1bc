"""Uid slots (the uid and bwrap modes): a uid of its own per concurrent sandbox, held by an flock across gradlab
processes; the processes a uid left behind, killed; the files it left in folders any uid may write, removed as that uid
(never as root: a link a submission left must not make root delete what it points at)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

UID_BASE = int(os.environ.get("GRADLAB_SANDBOX_UID_BASE", "1600000"))  # sandbox uids: UID_BASE + slot
SLOTS = 32  # concurrent sandboxes on one machine (across gradlab processes)
LOCK_DIR = Path(os.environ.get("GRADLAB_SANDBOX_LOCKS", "/run/gradlab-sandbox"))


# ----------------------------------------------------------------------------------------------------- uid slots

class Slot:
    """A sandbox uid of its own for one run: an flock on LOCK_DIR/slot-N (a root-only folder), held across gradlab
    processes, so two concurrent sandboxes (a folder's two workers, two CI jobs) never share a uid: RLIMIT_NPROC,
    kill(-1) and the /proc scans count per uid. The lock is checked after flock to be the file LOCK_DIR names (not
    one unlinked meanwhile). slot-N.used stands while a run's cleanup is not done: the next to take the slot (its
    owner is dead: the flock is free) cleans up first, and skips the uid if that fails; a uid never runs two
    submissions' code with the first one's leftovers."""

    def __init__(self, mode: str) -> None:
        import fcntl  # POSIX only: the sandbox also runs, in plain mode, on Windows

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
