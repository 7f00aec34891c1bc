"""One cgroup per sandbox (gradlab/practice/sandbox/box.py): the submission's processes bounded as a whole, as
PrairieLearn
and Jobe bound theirs. RLIMIT_AS bounds each process; 80 processes of 130 MB each, all within it, made the kernel's
OOM killer pick gradlab itself, and 88 busy processes left a neighbour's right answer 1/89th of the CPU.

A Group has a memory limit (swap included where the kernel accounts it), a process limit, and a CPU quota and weight
(the same weight as every other sandbox: a flood in one gets one sandbox's share, not one share per process). cgroup
v2 where gradlab's own cgroup can delegate memory, pids and cpu; cgroup v1 otherwise (memory, pids and cpu
hierarchies mounted under /sys/fs/cgroup). gradlab opens the group's cgroup.procs files and passes them to stage 1,
which writes "0" (itself) into each as root before it drops to the sandbox's uid: every process of the submission
starts inside, none can leave (moving needs write access to a cgroup.procs file, all root's).

available() says why not, in words, when neither can be used (no cgroupfs, not root, a v2 cgroup with processes of
its own so that no controller can be enabled below it); the sandbox then runs without one and gradlab says so.

What gradlab itself is given (budget()): the CPUs of its affinity and the tightest CPU quota, memory limit and process
limit of the cgroups it runs in (v1's cpu.cfs_quota_us, memory.limit_in_bytes, pids.max; v2's cpu.max, memory.max,
pids.max), read from its own cgroup up to the root: a container's --cpus, --memory and --pids-limit, a Slurm job's or a
Kubernetes pod's limits. A group never asks for more than that: cgroup v1 refuses a CPU quota above a parent's (EINVAL).

Not root (the userns mode), only cgroup v2, and only where this process's own cgroup folder is delegated to its user
(the folder, its cgroup.procs and cgroup.subtree_control writable: systemd does this for a unit with Delegate=yes);
the group is then made exactly as for root. Elsewhere available() says which of these is missing.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
V1 = ("memory", "pids", "cpu")  # hierarchies a group needs under cgroup v1
PERIOD_US = 100_000
_serial = itertools.count()


def _own(hierarchy: str) -> str:
    """This process's cgroup path in HIERARCHY ("" for v2's unified one) from /proc/self/cgroup."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if names.split(",") == ([hierarchy] if hierarchy else [""]) or (hierarchy and hierarchy in names.split(",")):
            return path
    raise OSError(f"no {hierarchy or 'cgroup v2'} line in /proc/self/cgroup")


def _own_folder(hierarchy: str, root: Path | None = None) -> Path:
    """This process's folder in HIERARCHY ("" for v2) under ROOT. In a container without a cgroup namespace,
    /proc/self/cgroup names the host's path (/docker/ID) while the container's own cgroup is mounted at the hierarchy's
    root: the path is then shortened from the left until it exists."""
    root = ROOT if root is None else root
    base = root / hierarchy if hierarchy else root
    parts = Path(_own(hierarchy).lstrip("/")).parts
    for start in range(len(parts) + 1):
        if (folder := base.joinpath(*parts[start:])).is_dir():
            return folder
    return base


def _not_v2() -> str:
    """Why a user other than root has no cgroup of its own here."""
    return f"{ROOT} is not cgroup v2, and cgroup v1's folders are root's"


def _own_v2() -> Path:
    """This process's own cgroup v2 folder."""
    return _own_folder("")


def _v2_base() -> Path | None:
    """Where a v2 group can be made (this process's cgroup, with memory, pids and cpu delegated), or None."""
    if not (ROOT / "cgroup.controllers").is_file():
        return None
    base = _own_v2()
    wanted = {"memory", "pids", "cpu"}
    if not wanted <= set((base / "cgroup.controllers").read_text().split()):
        raise OSError(f"cgroup v2 at {base} lacks {' '.join(sorted(wanted))} controllers")
    if not wanted <= set((base / "cgroup.subtree_control").read_text().split()):
        (base / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in sorted(wanted)))  # EBUSY: processes
    return base


def delegation_problem() -> str | None:
    """Not root: why this process's cgroup v2 folder is not delegated to it, or None when it is."""
    if not (ROOT / "cgroup.controllers").is_file():
        return _not_v2()
    try:
        base = _own_v2()
    except OSError as e:
        return str(e)
    for path in (base, base / "cgroup.procs", base / "cgroup.subtree_control"):
        if not os.access(path, os.W_OK):
            return f"your cgroup {base} is not delegated to you ({path.name} is not writable)"
    return None


@functools.cache
def available() -> tuple[str, str]:
    """("v2" | "v1", "") when a group can be made here, else ("", why not): a group is made and removed to see.
    Not root: v2 in a delegated cgroup only (delegation_problem())."""
    if os.name != "posix":
        return "", "not POSIX"
    if os.geteuid() != 0 and (problem := delegation_problem()):
        return "", problem
    try:
        group = Group(memory=64 << 20, pids=8, cpus=1.0)
    except OSError as e:
        if e.errno == errno.EBUSY and os.geteuid() != 0:  # a delegated leaf: gradlab (and its shell) live in it
            return "", (f"your cgroup {_own_v2()} holds processes, gradlab's own at least, so no "
                        "controller can be enabled below it")
        return "", f"no cgroup could be made ({e.strerror or e})"
    version = group.version
    group.remove()
    return version, ""


class Group:
    """A new cgroup: MEMORY bytes (swap included where accounted), PIDS tasks, CPUS CPUs at most. Raises OSError when
    it cannot be made; remove() it after its processes are dead."""

    def __init__(self, *, memory: int, pids: int, cpus: float) -> None:
        # the pid and a serial, and a random part: a group a killed gradlab left behind (its pid reused since) never
        # stands in the way (FileExistsError, measured on a folder a SIGKILLed run had left in one v1 hierarchy)
        name = f"gradlab-{os.getpid()}-{next(_serial)}-{secrets.token_hex(4)}"
        cpus = min(cpus, budget().quota or cpus)  # cgroup v1 refuses a quota above a parent's (EINVAL)
        self.dirs: list[Path] = []
        try:
            base = _v2_base()
            if base is None and os.geteuid() != 0:
                raise OSError(_not_v2())
            if base is not None:
                self.version = "v2"
                self._make(base / name)
                self._set(self.dirs[0], {"memory.max": memory, "pids.max": pids,
                                         "cpu.max": f"{int(cpus * PERIOD_US)} {PERIOD_US}"},
                          {"memory.swap.max": 0, "memory.oom.group": 1})
            else:
                self.version = "v1"
                for hierarchy in V1:
                    self._make(_own_folder(hierarchy) / name)
                memory_dir, pids_dir, cpu_dir = self.dirs
                self._set(memory_dir, {"memory.limit_in_bytes": memory}, {"memory.memsw.limit_in_bytes": memory})
                self._set(pids_dir, {"pids.max": pids}, {})
                self._set(cpu_dir, {"cpu.cfs_period_us": PERIOD_US, "cpu.cfs_quota_us": int(cpus * PERIOD_US)}, {})
        except BaseException:
            self.remove()
            raise

    @staticmethod
    def _set(folder: Path, needed: dict, optional: dict) -> None:
        """NEEDED's settings, then OPTIONAL's where the kernel has them (swap accounting, v2's oom.group)."""
        for key, value in needed.items():
            (folder / key).write_text(str(value))
        for key, value in optional.items():
            if (folder / key).exists():
                (folder / key).write_text(str(value))

    def _make(self, path: Path) -> None:
        path.mkdir(mode=0o700)
        self.dirs.append(path)

    def procs_fds(self) -> list[int]:
        """cgroup.procs of each of the group's folders, open for writing (stage 1 writes "0" into each)."""
        return [os.open(d / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC) for d in self.dirs]

    def members(self) -> list[int]:
        found: set[int] = set()
        for d in self.dirs:
            with contextlib.suppress(OSError):
                found |= {int(p) for p in (d / "cgroup.procs").read_text().split()}
        return sorted(found)

    def memory_peak(self) -> int | None:
        for d in self.dirs:
            for key in ("memory.peak", "memory.max_usage_in_bytes"):
                with contextlib.suppress(OSError, ValueError):
                    return int((d / key).read_text())
        return None

    def remove(self) -> list[int]:
        """Kill what is left in the group, remove its folders; returns the pids that would not die (should be [])."""
        for _ in range(50):
            left = self.members()
            if not left:
                break
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, 9)
            time.sleep(0.02)
        for d in reversed(self.dirs):
            for _ in range(50):  # a process just killed leaves its cgroup a moment later
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
        self.dirs = [d for d in self.dirs if d.exists()]
        return self.members()


# ------------------------------------------------------------------------------------- what gradlab itself is given

@dataclass(frozen=True)
class Budget:
    """What this process and everything it starts may use, together: CPUS (its affinity, and QUOTA, the tightest CPU
    quota of its cgroups, in CPUs; None when none has one), MEMORY bytes (the tightest memory limit of its cgroups, and
    the machine's MemAvailable when it started), PIDS tasks still free under the tightest process limit (None: no
    limit), and FROM: where each bound came from, in words ("cgroup v1 cpu quota 1 CPU at /sys/fs/cgroup/cpu/x")."""

    cpus: float
    quota: float | None
    memory: int
    pids: int | None
    said: tuple[str, ...] = ()


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, ValueError):
        return None


def _up(folder: Path, top: Path) -> list[Path]:
    """FOLDER and each folder above it up to TOP (included)."""
    chain = [folder]
    while folder != top and top in folder.parents:
        folder = folder.parent
        chain.append(folder)
    return chain


def _number(text: str | None) -> int | None:
    """A cgroup file's number; None for "max", -1 or anything above 2**62 (v1 writes "no limit" as a huge number)."""
    if text is None or not text.lstrip("-").isdigit():
        return None
    n = int(text)
    return n if 0 <= n < 1 << 62 else None


def _limits(root: Path) -> tuple[float | None, int | None, int | None, list[str]]:
    """(CPU quota in CPUs, memory bytes, free tasks, what said so) from this process's cgroups under ROOT: v2 where
    ROOT is a cgroup v2 mount, else the v1 hierarchies mounted under it. The tightest along each chain."""
    quota: float | None = None
    memory: int | None = None
    pids: int | None = None
    said: list[str] = []

    def tighter(old, new, what: str, where: Path, unit: str):
        if new is not None and (old is None or new < old):
            said.append(f"{what} {new:g}{unit} ({where})")
            return new
        return old

    v2 = (root / "cgroup.controllers").is_file()
    chains = {h: _up(_own_folder("" if v2 else h, root), root if v2 else root / h)
              for h in (("",) if v2 else ("cpu", "memory", "pids"))
              if v2 or (root / h).is_dir()}
    for hierarchy, chain in chains.items():
        for folder in chain:
            if hierarchy in ("", "cpu"):
                if v2:
                    limit, _, period = (_read(folder / "cpu.max") or "max").partition(" ")
                else:
                    limit, period = _read(folder / "cpu.cfs_quota_us") or "-1", _read(folder / "cpu.cfs_period_us")
                cpus = (_number(limit) or 0) / (_number(period) or PERIOD_US) or None
                quota = tighter(quota, cpus, f"cgroup {'v2 cpu.max' if v2 else 'v1 cpu quota'}", folder, " CPUs")
            if hierarchy in ("", "memory"):
                limit = _number(_read(folder / ("memory.max" if v2 else "memory.limit_in_bytes")))
                memory = tighter(memory, limit, "cgroup memory limit", folder, " bytes")
            if hierarchy in ("", "pids"):
                limit = _number(_read(folder / "pids.max"))
                used = _number(_read(folder / "pids.current")) or 0
                pids = tighter(pids, None if limit is None else max(0, limit - used), "cgroup tasks free", folder, "")
    return quota, memory, pids, said


def _available_memory() -> int:
    """MemAvailable of /proc/meminfo in bytes (MemTotal where the kernel has no MemAvailable)."""
    fields = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields[key] = int(value.split()[0]) * 1024
    return fields.get("MemAvailable", fields.get("MemTotal", 4 << 30))


@functools.cache
def budget(root: Path | None = None) -> Budget:
    """What gradlab may use here (Budget), read once per process; ROOT: where cgroupfs is (default ROOT)."""
    root = ROOT if root is None else root
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        quota, memory, pids, said = _limits(root) if os.name == "posix" and root.is_dir() else (None, None, None, [])
    except (OSError, ValueError):
        quota, memory, pids, said = None, None, None, []
    machine = _available_memory()
    return Budget(cpus=min(affinity, quota or affinity), quota=quota, memory=min(machine, memory or machine),
                  pids=pids, said=(f"{affinity} CPUs in this process's affinity", *said,
                                   f"{machine} bytes available on the machine"))
