"""How many CPU threads torch computes with: chosen on purpose for each lesson, overridable, shown in every header.

torch's default is one thread per core. For the tensors of these lessons (a 4→128→128→2 network, a 784×10 softmax,
a batch of 100) a second thread saves little on a quiet machine, and on a busy one it is ruinous: the threads of
one operation wait for each other at every barrier, and a thread that lost its core to another program holds up
the rest (measured on 2 cores: `gradlab dqn --total-steps 6000` 5.0 s quiet, 376 s beside two busy programs with
2 threads, 8.9 s with 1). So every lesson runs on one thread, except those whose matrices are large enough to gain
from more: they take as many threads as there are idle CPUs when the lesson starts. `bench/bench_threads.py`
measures each lesson quiet and beside busy programs.
"""

from __future__ import annotations

import os
import time

from gradlab.errors import check

POLICIES = ("one", "idle")  # one: a single thread; idle: one per CPU that is idle when the lesson starts
MAX_THREADS = 1024


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def _cpu_times() -> tuple[int, int] | None:
    """(idle, total) jiffies of all CPUs from /proc/stat, or None where there is no /proc."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return fields[3] + (fields[4] if len(fields) > 4 else 0), sum(fields[:8])  # idle + iowait; without guest


def idle_cpus(window: float = 0.1) -> float:
    """How many CPUs were idle, on average, over the next WINDOW seconds (Linux); elsewhere, from the load average."""
    n = os.cpu_count() or 1
    before = _cpu_times()
    if before is None:
        try:
            return max(0.0, n - os.getloadavg()[0])
        except (AttributeError, OSError):
            return float(n)
    time.sleep(window)
    after = _cpu_times()
    total = after[1] - before[1]
    return n * (after[0] - before[0]) / total if total > 0 else float(n)


def validate(requested: int | None) -> None:
    if requested is not None:
        check(1 <= requested <= MAX_THREADS, f"--threads must be between 1 and {MAX_THREADS}, got {requested}; "
                                             f"try --threads 1")


def choose(policy: str, requested: int | None) -> tuple[int, str]:
    """(threads, why) for a lesson of POLICY; REQUESTED (--threads N) wins."""
    if requested is not None:
        validate(requested)
        return requested, "--threads"
    if policy == "idle":
        cpus = available_cpus()
        idle = idle_cpus()
        n = max(1, min(cpus, round(idle)))
        return n, f"{idle:.1f} of {cpus} CPUs idle"
    return 1, "small tensors"


def apply(n: int) -> None:
    """Make torch compute with N threads from now on."""
    import torch

    torch.set_num_threads(n)
