"""How many CPU threads torch computes with: one, on purpose, unless --threads says otherwise; shown in every header.

torch's default is one thread per core. For the tensors of these lessons (a 4→128→128→2 network, a 784×10 softmax,
a 784→256→256→10 mlp on batches of 100) a second thread saves little on a quiet machine (about 10%, measured on
`gradlab clip`), and on a busy one it is ruinous: the threads of one operation wait for each other at every
barrier, and a thread that lost its core to another program holds up the rest (measured on 2 cores: `gradlab dqn
--total-steps 6000` 5.0 s quiet, 376 s beside two busy programs with 2 threads, 8.9 s with 1). A thread count that
followed the machine's load would also break `--seed`'s promise: float sums split over a different number of
threads round differently. `bench/bench_threads.py` measures every lesson quiet and beside busy programs.
"""

from __future__ import annotations

import os

from gradlab.errors import check_option

DEFAULT_WHY = "small tensors"


def cpus() -> int:
    """The CPUs this process may run on (its affinity, which a container or `taskset` narrows), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS and Windows have no sched_getaffinity
        return max(1, os.cpu_count() or 1)


def validate(requested: int | None) -> None:
    """More threads than CPUs never helps these lessons, and beside a busy program each extra thread stalls every
    operation at its barriers (measured: `gradlab mnist --threads 1000` took 7.7 s alone on 2 cores and over 10
    minutes inside a test process beside two busy ones): --threads stops at the machine's CPUs."""
    if requested is not None:
        most = cpus()
        check_option(1 <= requested <= most, "threads",
                     f"must be between 1 and {most} (the CPUs this machine has), got {requested}", example=1)


def choose(requested: int | None) -> tuple[int, str]:
    """(threads, why): one thread, or REQUESTED (--threads N)."""
    validate(requested)
    return (requested, "--threads") if requested is not None else (1, DEFAULT_WHY)


def apply(n: int) -> None:
    """Make torch compute with N threads from now on."""
    import torch

    torch.set_num_threads(n)
