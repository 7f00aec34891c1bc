"""Does every lesson stay fast on a busy laptop? Each lesson's default run, quiet and beside busy programs.

For every lesson: its default command (the data lessons on the bundled sample, offline) in a fresh process, timed on
a quiet machine, beside one busy program and beside two (each a Python loop that spins one CPU: the worst neighbour
there is), with gradlab's thread policy (one thread, gradlab/kit/threads.py). The naive baseline, measured in the same
run: torch's own default of one thread per CPU (`--threads <CPUs>`), quiet and beside two busy programs, given at
most --timeout seconds. Targets (issue "Dependable on a real classroom laptop"): busy/quiet ≤ 2× beside two busy
programs on 2 cores, and quiet no more than 10% slower than torch's default. Printed, not asserted, and written to
bench/results/threads.json (bench/record.py), which the docs render.

    python bench/bench_threads.py                        # every lesson
    python bench/bench_threads.py --lessons dqn,mnist
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import subprocess
import sys
import time

import record
from rich.console import Console
from rich.table import Table

from gradlab.lessons import LESSONS

GRADLAB = [sys.executable, "-m", "gradlab"]
SPIN = [sys.executable, "-c", "while True: pass"]


@contextlib.contextmanager
def busy(n: int):
    """N programs that each keep one CPU busy, for as long as the block runs."""
    procs = [subprocess.Popen(SPIN) for _ in range(n)]
    try:
        time.sleep(0.5 if n else 0)  # let them get going before the lesson starts
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def timed(args: list[str], timeout: float) -> tuple[float, int | None]:
    """(wall seconds, exit code); the code is None when the run was stopped at TIMEOUT."""
    start = time.perf_counter()
    try:
        proc = subprocess.run([*GRADLAB, *args], capture_output=True, timeout=timeout)
        return time.perf_counter() - start, proc.returncode
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, None


def measured(args: list[str], busy_programs: int, result: tuple[float, int | None], timeout: float) -> dict:
    """One timed run as threads.json keeps it (rc None: stopped at TIMEOUT seconds, so the wall time is a floor)."""
    wall, code = result
    return {"command": shlex.join(["gradlab", *args]), "busy": busy_programs, "wall_s": round(wall, 2), "rc": code,
            "timeout_s": timeout}


def cell(wall: float, code: int | None) -> str:
    return f"> {wall:.0f}" if code is None else f"{wall:.1f}" + ("" if code == 0 else f" (exit {code})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", default=",".join(LESSONS))
    parser.add_argument("--timeout", type=float, default=120.0, help="give the baseline at most this many seconds")
    args = parser.parse_args()
    cpus = os.cpu_count() or 1
    console = Console(highlight=False, width=150)
    console.print(f"bench threads: {cpus} CPUs, load average {os.getloadavg()[0]:.2f} before the first run")
    header, start, rows = record.machine(), time.perf_counter(), []
    table = Table(title="wall seconds of each lesson's default run (fresh process, start-up included)",
                  title_justify="left")
    for col in ("lesson", "quiet", "+1 busy", "+2 busy", "+2 busy / quiet",
                f"baseline --threads {cpus}: quiet", "+2 busy", "+2 busy / quiet", "quiet vs baseline"):
        table.add_column(col, justify="right")
    for name in args.lessons.split(","):
        info = LESSONS[name]
        cmd = [name, *(("--dataset", "mnist-sample", "--offline") if info.needs_data else ()), "--quiet"]
        ours, base, row = [], [], {"lesson": name, "ours": [], "baseline": []}
        for n in (0, 1, 2):
            with busy(n):
                ours.append(timed(cmd, 10 * args.timeout))
            row["ours"].append(measured(cmd, n, ours[-1], 10 * args.timeout))
        for n in (0, 2):
            with busy(n):
                base.append(timed([*cmd, "--threads", str(cpus)], args.timeout))
            row["baseline"].append(measured([*cmd, "--threads", str(cpus)], n, base[-1], args.timeout))
        rows.append(row)
        ratio = ours[2][0] / ours[0][0]
        base_ratio = ("> " if base[1][1] is None else "") + f"{base[1][0] / base[0][0]:.1f}×"  # a timeout: at least
        table.add_row(name, *(cell(*r) for r in ours), f"{ratio:.2f}×", cell(*base[0]), cell(*base[1]),
                      base_ratio, f"{ours[0][0] / base[0][0] - 1:+.0%}")
        console.print(f"{name}: quiet {ours[0][0]:.1f} s, +2 busy {ours[2][0]:.1f} s ({ratio:.2f}×)")
    console.print(table)
    console.print("wrote", record.write("threads", {
        **header, "load_average_after": record.load(), "command": record.command(),
        "busy_program": shlex.join(SPIN[1:]),
        "wall_s": round(time.perf_counter() - start, 1), "rows": rows}))


if __name__ == "__main__":
    main()
