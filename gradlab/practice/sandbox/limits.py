"""What every part of the sandbox shares: a sandbox's limits, what a run came to, and the few constants of its
life (gradlab/practice/sandbox/box.py runs it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

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


def package_dir() -> str:
    """The folder of the gradlab package this process runs."""
    return str(Path(__file__).resolve().parent.parent.parent)
