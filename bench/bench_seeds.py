"""Seed sweep: do the lessons' claims hold on any seed, not just the one the defaults were tuned on?

Runs `gradlab LESSON --seed S --json F --quiet` as a user would, for every seed of --seeds, JOBS at a time (each run
uses the lesson's own thread policy: one thread), and prints per seed the "learns" claim's measured value (or, for
a lesson without one, its tightest "≥" claim: the smallest measured / bound), whether every claim held, and the
run's wall time; then the pass count and the total time. Printed, not asserted, and written to
bench/results/seeds.json (bench/record.py): one entry per sweep, keyed by its arguments (`dqn`, `ddp --workers 3
--uneven --micro-batches 3`, `dqn --seeds 20-39`), so the Makefile's three calls keep each other's results; the docs
render them (`<!-- bench: seeds KEY -->` blocks, scripts/readme.py).

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
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import record
from rich.console import Console
from rich.table import Table

GRADLAB = [sys.executable, "-m", "gradlab"]
DEFAULT_SEEDS = "0-19"


def seeds_from(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def sweep_key(lesson: str, extra: list[str], seeds: str) -> str:
    """The sweep's name in bench/results/seeds.json: its lesson and options, and its seeds when not the default."""
    return shlex.join([lesson, *extra]) + ("" if seeds == DEFAULT_SEEDS else f" --seeds {seeds}")


def run_one(lesson: str, seed: int, extra: list[str], folder: Path) -> dict:
    out = folder / f"{lesson}-{seed}.json"
    args = [lesson, "--seed", str(seed), "--json", str(out), "--quiet", *extra]
    start = time.perf_counter()
    proc = subprocess.run([*GRADLAB, *args], capture_output=True, text=True)
    wall = time.perf_counter() - start
    command = shlex.join(["gradlab", *args]).replace(str(out), out.name)  # the JSON went to a temporary folder
    row = {"seed": seed, "command": command, "rc": proc.returncode, "wall": wall}
    if not out.exists():
        return {**row, "claims": [], "error": proc.stderr.strip()[-200:]}
    return {**row, **json.loads(out.read_text())}


def number(value) -> float:
    """A claim's value as a float (the lesson's JSON writes non-finite values as "nan", "inf", "-inf")."""
    return float(value)


def recorded(r: dict) -> dict:
    """What seeds.json keeps of one run: its command, exit code, wall time, and each claim's value and verdict."""
    metrics = r.get("metrics", {})
    best = metrics.get("best_step", metrics.get("stop-grad", {}).get("best_step"))  # actor-critic, dqn
    return {"seed": r["seed"], "command": r["command"], "rc": r["rc"], "passed": r["rc"] == 0,
            "wall_s": round(r["wall"], 2), "best_step": best, "stopped": r.get("stopped"),
            "error": r.get("error"),
            "claims": [{k: c[k] for k in ("id", "value", "bound", "op", "passed")} for c in r["claims"]]}


def sweep(lesson: str, seeds: list[int], extra: list[str], jobs: int, console: Console) -> dict:
    """Run the sweep, print its table and return what seeds.json keeps of it."""
    header = record.machine()
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
                         key=lambda c: number(c["value"]) / c["bound"], default=None)
        failed = [c["id"] for c in r["claims"] if not c["passed"]] or ([r.get("error", "?")] if r["rc"] else [])
        passed += r["rc"] == 0
        metrics = r.get("metrics", {})
        best = metrics.get("best_step", metrics.get("stop-grad", {}).get("best_step"))  # actor-critic, dqn
        table.add_row(str(r["seed"]), f"{number(learns['value']):.3g} ({learns['id']})" if learns else "—",
                      f"≥ {learns['bound']:.3g}" if learns else "—", f"{best:,}" if best else "—",
                      ", ".join(failed) or "none", str(r["rc"]), f"{r['wall']:.1f}")
    console.print(table)
    walls = sorted(r["wall"] for r in results)
    console.print(f"[bold]{lesson}: every claim held on {passed} of {len(results)} seeds[/]; "
                  f"{total:.0f} s for the sweep ({jobs} at a time), per run median {statistics.median(walls):.1f} s, "
                  f"max {walls[-1]:.1f} s")
    out = {**header, "load_average_after": record.load(), "lesson": lesson, "extra": extra,
           "seeds": [seeds[0], seeds[-1]], "jobs": jobs, "passed": passed, "runs": len(results),
           "wall_s": round(total, 1), "median_run_s": round(statistics.median(walls), 1),
           "max_run_s": round(walls[-1], 1),
           "claim_texts": {c["id"]: c["text"] for r in results for c in r["claims"]},
           "rows": [recorded(r) for r in results]}
    learned = [number(c["value"]) for r in results for c in r["claims"] if c["id"].endswith("learns")]
    if learned:  # the "learns" mark is CartPole-v0's 195 (gradlab.kit.rl.LEARNED); how many reach v1's own threshold?
        import gymnasium

        v1 = gymnasium.spec("CartPole-v1").reward_threshold
        console.print(f"{lesson}: {sum(v >= v1 for v in learned)} of {len(learned)} reach CartPole-v1's registered "
                      f"'solved' threshold {v1:g} (the claim's mark is v0's 195); lowest {min(learned):.1f}")
        out["cartpole_v1"] = {"threshold": v1, "reached": sum(v >= v1 for v in learned), "of": len(learned),
                              "lowest": round(min(learned), 1)}
    return out


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
        extra = shlex.split(args.extra)
        result = sweep(lesson, seeds_from(args.seeds), extra, args.jobs, console)
        saved = record.read("seeds")  # read again after each sweep: another call may have written its own
        sweeps = {**saved.get("sweeps", {}), sweep_key(lesson, extra, args.seeds): result}
        console.print(f"wrote {record.write('seeds', {'sweeps': dict(sorted(sweeps.items()))})}")


if __name__ == "__main__":
    main()
