"""What the sandbox costs: start-up of `python -I -c pass` as a bare subprocess and through
gradlab.practice.sandbox.box.run in each mode this machine allows (plain always; bwrap as root with bubblewrap; uid with
GRADLAB_SANDBOX=uid where the fallback is possible), then a whole `gradlab check` of one model answer in each. Every
variant once per round, N rounds (a noisy neighbour hits them all alike); the minimum is the figure to trust on a
shared machine. Printed, never asserted, and written to bench/results/sandbox.json (bench/record.py), which the docs
render.

    python bench/bench_sandbox.py [N]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import record

from gradlab.practice import all_exercises, answer_source
from gradlab.practice.classroom.starter import HEADER
from gradlab.practice.judging.check import run_check
from gradlab.practice.judging.submission import Submission
from gradlab.practice.sandbox import box, bwrap, cgroups, files, modes

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10


def timed(variants: dict, rounds: int) -> dict:
    for fn in variants.values():
        fn()  # the page cache warm
    xs = {k: [] for k in variants}
    for _ in range(rounds):
        for k, fn in variants.items():
            t = time.perf_counter()
            fn()
            xs[k].append((time.perf_counter() - t) * 1000)
    return {k: (min(v), statistics.median(v)) for k, v in xs.items()}


def main() -> None:
    header, start = record.machine(), time.perf_counter()
    found = modes.detect()
    tried = ["plain"] + ([found.mode] if found.isolated else [])
    package = files.sandbox_files("gradlab.lessons.clip.exercises.harness")
    variants = {"subprocess python -c pass": lambda: subprocess.run([sys.executable, "-c", "pass"], check=True)}
    for mode in tried:
        def one(mode=mode) -> None:
            o = box.run([sys.executable, "-I", "-c", "pass"], package=package, inputs=b"", mode=mode)
            assert o.returncode == 0 and not o.stopped, (mode, o.printed[-500:])
        variants[f"box.run({mode}) python -c pass"] = one
    if cgroups.available()[0]:  # the cgroup each isolated sandbox gets: made, its limits written, removed
        variants[f"cgroup {cgroups.available()[0]} made and removed"] = lambda: cgroups.Group(
            memory=2 << 30, pids=96, cpus=2.0).remove()
    if found.mode == "bwrap":
        variants["bare bwrap (namespaces, /usr, proc, dev, tmpfs) true"] = lambda: subprocess.run(
            ["bwrap", *bwrap.namespaces(), *bwrap.system_binds(), "--proc", "/proc", "--dev", "/dev", "--size",
             "1048576", "--tmpfs", "/tmp", "/usr/bin/true"], check=True)
    print(f"machine: {found.mode} ({found.why or 'full isolation'}); {N} rounds; ms (min, median)")
    rows = []
    for k, (lo, med) in timed(variants, N).items():
        print(f"  {k:55} {lo:8.1f} {med:8.1f}")
        rows.append({"what": k, "rounds": N, "min_ms": round(lo, 1), "median_ms": round(med, 1)})
    exercise = all_exercises()["clip.clip_by_global_norm"]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "clip.py")
        path.write_text(HEADER + answer_source(exercise))
        submission = Submission(shown=str(path), exercise=exercise, source=path.read_bytes())
        checks = {}
        for mode in tried:
            def check(mode=mode) -> None:
                old = modes.detect
                modes.detect = lambda: modes.Detected(mode, "bench")
                try:
                    assert run_check(submission).exit_code == 0
                finally:
                    modes.detect = old
            checks[f"gradlab check (clip's model answer), {mode}"] = check
        for k, (lo, med) in timed(checks, max(3, N // 3)).items():
            print(f"  {k:55} {lo:8.1f} {med:8.1f}")
            rows.append({"what": k, "rounds": max(3, N // 3), "min_ms": round(lo, 1), "median_ms": round(med, 1)})
    print("wrote", record.write("sandbox", {**header, "load_average_after": record.load(), "command": record.command(),
                                            "wall_s": round(time.perf_counter() - start, 1), "mode": found.mode,
                                            "why": found.why, "rows": rows}))


if __name__ == "__main__":
    main()
