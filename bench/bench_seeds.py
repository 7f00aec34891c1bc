"""Seed sweep: do the lessons' claims hold on any seed, not just the one the defaults were tuned on?

Runs `gradlab LESSON --seed S --json F --quiet` as a user would, for every seed of --seeds, JOBS at a time (each run
uses the lesson's own thread policy: one thread), and prints per seed the "learns" claim's measured value (or, for
a lesson without one, its tightest "≥" claim: the smallest measured / bound), whether every claim held, and the
run's wall time; then the pass count and the total time. Printed, not asserted.

    python bench/bench_seeds.py                              # dqn and actor-critic, seeds 0-19, defaults
    python bench/bench_seeds.py --lessons dqn --seeds 20-39  # seeds nobody tuned on
    python bench/bench_seeds.py --lessons dqn --extra "--total-steps 20000"
    python bench/bench_seeds.py --lessons ddp --jobs 1 --extra "--workers 3 --uneven --micro-batches 3"
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

GRADLAB = [sys.executable, "-m", "gradlab"]


def seeds_from(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def run_one(lesson: str, seed: int, extra: list[str], folder: Path) -> dict:
    out = folder / f"{lesson}-{seed}.json"
    start = time.perf_counter()
    proc = subprocess.run([*GRADLAB, lesson, "--seed", str(seed), "--json", str(out), "--quiet", *extra],
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if not out.exists():
        return {"seed": seed, "rc": proc.returncode, "wall": wall, "claims": [], "error": proc.stderr.strip()[-200:]}
    return {"seed": seed, "rc": proc.returncode, "wall": wall, **json.loads(out.read_text())}


def sweep(lesson: str, seeds: list[int], extra: list[str], jobs: int, console: Console) -> tuple[int, int]:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda s: run_one(lesson, s, extra, Path(tmp)), seeds))
    total = time.perf_counter() - start
    table = Table(title=f"gradlab {lesson} {' '.join(extra)} — seeds {seeds[0]}–{seeds[-1]}", title_justify="left")
    for col in ("seed", "learns: measured", "bound", "best checkpoint", "failed claims", "exit", "wall s"):
        table.add_column(col, justify="right")
    passed = 0
    for r in results:
        learns = next((c for c in r["claims"] if c["id"].endswith("learns")), None)
        if learns is None:  # no learning claim: the "≠" claim closest to its bound
            learns = min((c for c in r["claims"] if c.get("op") == ">=" and c["bound"]),
                         key=lambda c: c["value"] / c["bound"], default=None)
        failed = [c["id"] for c in r["claims"] if not c["passed"]] or ([r.get("error", "?")] if r["rc"] else [])
        passed += r["rc"] == 0
        metrics = r.get("metrics", {})
        best = metrics.get("best_step", metrics.get("stop-grad", {}).get("best_step"))  # actor-critic, dqn
        table.add_row(str(r["seed"]), f"{learns['value']:.3g} ({learns['id']})" if learns else "—",
                      f"≥ {learns['bound']:.3g}" if learns else "—", f"{best:,}" if best else "—",
                      ", ".join(failed) or "none", str(r["rc"]), f"{r['wall']:.1f}")
    console.print(table)
    walls = sorted(r["wall"] for r in results)
    console.print(f"[bold]{lesson}: every claim held on {passed} of {len(results)} seeds[/]; "
                  f"{total:.0f} s for the sweep ({jobs} at a time), per run median {walls[len(walls) // 2]:.1f} s, "
                  f"max {walls[-1]:.1f} s")
    learned = [c["value"] for r in results for c in r["claims"] if c["id"].endswith("learns")]
    if learned:  # the "learns" mark is CartPole-v0's 195 (gradlab.kit.rl.LEARNED); how many reach v1's own threshold?
        import gymnasium

        v1 = gymnasium.spec("CartPole-v1").reward_threshold
        console.print(f"{lesson}: {sum(v >= v1 for v in learned)} of {len(learned)} reach CartPole-v1's registered "
                      f"'solved' threshold {v1:g} (the claim's mark is v0's 195); lowest {min(learned):.1f}")
    return passed, len(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", default="dqn,actor-critic")
    parser.add_argument("--seeds", default="0-19")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (each uses one thread)")
    parser.add_argument("--extra", default="", help="more options for every run, e.g. '--total-steps 20000'")
    args = parser.parse_args()
    console = Console(highlight=False, width=150)
    console.print(f"bench seeds: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    for lesson in args.lessons.split(","):
        sweep(lesson, seeds_from(args.seeds), shlex.split(args.extra), args.jobs, console)


if __name__ == "__main__":
    main()
