"""The benches' figures as Markdown, for the docs: scripts/readme.py rewrites every `<!-- bench: SPEC -->` …
`<!-- /bench -->` block of README.md and docs/**/*.md with what this module renders from bench/results/*.json (the
files bench/record.py writes), and tests/test_readme.py checks each block equals it. No figure is typed on a page.

    <!-- bench: seeds -->                  every seed sweep of seeds.json, one row each
    <!-- bench: seeds dqn -->              one sweep (its key: lesson and options), seed by seed
    <!-- bench: mnist -->                  samples/s of each mnist loop against the naive loop, quiet and busy
    <!-- bench: threads -->                each lesson's default run, quiet and beside busy programs
    <!-- bench: check -->                  seconds per `gradlab check`, per exercise
    <!-- bench: gpu -->                    CPU vs CUDA samples/s, or that no GPU was there
    <!-- bench: sandbox -->                what the sandbox costs in milliseconds (not part of `make bench`)
    <!-- bench: total -->                  how long `make bench`'s parts took, and their sum

Every rendering says when, on which machine and under which load its figures were measured; timings are upper
bounds on a busy machine, the claims' verdicts do not depend on it (runs repeat bit for bit with --seed on a CPU).
"""

from __future__ import annotations

import datetime
import itertools
import json
import shlex
import statistics
from collections.abc import Callable
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
SCRIPT = {"seeds": "bench_seeds.py", "mnist": "bench_mnist.py", "threads": "bench_threads.py",
          "check": "bench_check.py", "gpu": "bench_gpu.py", "sandbox": "bench_sandbox.py"}
# What `make bench` runs (the Makefile's `bench` target; tests/test_readme.py checks the two agree): a file of
# bench/results, and for seeds.json the sweeps its three calls write.
MAKE_BENCH = [("mnist", None), ("gpu", None), ("check", None), ("threads", None), ("seeds", "dqn"),
              ("seeds", "actor-critic"), ("seeds", "ddp"), ("seeds", "ddp --workers 3 --uneven --micro-batches 3")]


class Missing(Exception):
    """A bench block whose JSON (or sweep) does not exist: the message says which bench to run."""


def median_run(sweep: dict) -> float:
    """The median of a sweep's run wall times, from its rows (a JSON written before bench_seeds took
    statistics.median kept the upper middle value)."""
    walls = [r["wall_s"] for r in sweep.get("rows", []) if isinstance(r.get("wall_s"), int | float)]
    return round(statistics.median(walls), 1) if walls else sweep["median_run_s"]


def load(name: str, results: Path = RESULTS) -> dict:
    path = results / f"{name}.json"
    if not path.is_file():
        raise Missing(f"bench/results/{name}.json does not exist: run `python bench/{SCRIPT[name]}` (part of "
                      "`make bench`) and commit the file it writes")
    return json.loads(path.read_text(encoding="utf-8"))


def duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def machine(d: dict) -> str:
    """The machine and software, without the time or the load: 'AMD EPYC, 2 cores, no GPU, torch 2.14.1'."""
    return f"{d['cpu']}, {d['cpus']} cores, {d['gpu'] or 'no GPU'}, torch {d['torch']}"


def load_text(d: dict, label: str = "load average ") -> str:
    after = f", {d['load_average_after'][0]:g} after" if "load_average_after" in d else ""
    return f"{label}{d['load_average_before'][0]:g} before{after}"


def measured(d: dict, command: str | None = None) -> str:
    """'Measured DATE by COMMAND on MACHINE, at nice N, load average L before, M after' for one bench run."""
    return (f"Measured {d['measured']} by `{command or d['command']}` on {machine(d)}, at nice {d['nice']}, "
            f"{load_text(d)} (1-minute)")


def value(v) -> float:
    return float(v)  # the lessons' JSON writes non-finite values as "nan", "inf", "-inf"


def fmt(v) -> str:
    return f"{value(v):.3g}"


# --- seeds.json: bench_seeds.py's sweeps ----------------------------------------------------------------------------

def sweep_command(s: dict) -> str:
    """The command that reruns this sweep alone."""
    lo, hi = s["seeds"]
    extra = ["--extra", shlex.join(s["extra"])] if s["extra"] else []
    return shlex.join(["python", "bench/bench_seeds.py", "--lessons", s["lesson"], "--seeds", f"{lo}-{hi}",
                       "--jobs", str(s["jobs"]), *extra])


def run_command(s: dict) -> str:
    """What each run of the sweep is, as a user types it (S: the seed)."""
    return shlex.join(["gradlab", s["lesson"], "--seed", "S", *s["extra"]])


def at_a_time(s: dict) -> str:
    return "one run at a time" if s["jobs"] == 1 else f"{s['jobs']} runs at a time"


def held(s: dict) -> tuple[int, int]:
    """(seeds on which every claim held and the run exited 0, seeds run), counted from the rows."""
    return sum(r["passed"] for r in s["rows"]), len(s["rows"])


def headline(row: dict) -> dict | None:
    """The "learns" claim, or for a lesson without one its tightest "≥" claim (smallest measured / bound)."""
    learns = next((c for c in row["claims"] if c["id"].endswith("learns")), None)
    if learns is not None:
        return learns
    return min((c for c in row["claims"] if c["op"] == ">=" and c["bound"]),
               key=lambda c: value(c["value"]) / c["bound"], default=None)


def closest_equality(row: dict) -> dict | None:
    """The "≤" claim nearest its bound (largest measured / bound)."""
    return max((c for c in row["claims"] if c["op"] == "<=" and c["bound"]),
               key=lambda c: value(c["value"]) / c["bound"], default=None)


def sweep_summary(s: dict) -> str:
    n, of = held(s)
    lo, hi = s["seeds"]
    v1 = s.get("cartpole_v1")
    marks = {c["bound"] for r in s["rows"] for c in r["claims"] if c["id"].endswith("learns")}
    mark = f" is {', '.join(f'{m:g}' for m in sorted(marks))}" if marks else ""
    reach = (f"; {v1['reached']} of {v1['of']} reach CartPole-v1's registered 'solved' threshold {v1['threshold']:g} "
             f"(the claim's mark{mark}; lowest {v1['lowest']:g})") if v1 else ""
    return f"every claim held on **{n} of {of} seeds** (seeds {lo}–{hi}){reach}"


def seeds_one(data: dict, key: str) -> str:
    sweeps = data.get("sweeps", {})
    if key not in sweeps:
        raise Missing(f"bench/results/seeds.json has no sweep {key!r} (it has {', '.join(map(repr, sweeps))}): run "
                      f"`python bench/bench_seeds.py --lessons LESSON [--extra ...]` for it")
    s = sweeps[key]
    rows = s["rows"]
    has_best = any(r["best_step"] for r in rows)
    has_eq = any((eq := closest_equality(r)) and value(eq["value"]) for r in rows)  # not when every one is 0
    heads = {h["id"] for r in rows if (h := headline(r))}
    head_name = "its learning claim" if all(h.endswith("learns") for h in heads) else "its tightest ≥ claim"
    lines = [f"`{run_command(s)}` for each seed S: {sweep_summary(s)}. {measured(s, sweep_command(s))}; "
             f"{at_a_time(s)}, {duration(s['wall_s'])} in all, each run {median_run(s):g} s median, "
             f"{s['max_run_s']:g} s at most (wall times grow with the load).", ""]
    head = ["seed", f"{head_name}: measured (bound)"]
    head += ["best checkpoint (step)"] * has_best + ["the ≤ claim nearest its bound: measured (bound)"] * has_eq
    head += ["claims that failed", "wall s"]
    lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        h, eq = headline(r), closest_equality(r)
        cells = [str(r["seed"]), f"{fmt(h['value'])} (≥ {h['bound']:g}){'' if h['passed'] else ' ✗'}" if h else "—"]
        if has_best:
            cells.append(f"{r['best_step']:,}" if r["best_step"] else "—")
        if has_eq:
            cells.append(f"{fmt(eq['value'])} (≤ {eq['bound']:g}, {eq['id']})" if eq else "—")
        failed = [c["id"] for c in r["claims"] if not c["passed"]] or ([r["error"] or f"exit {r['rc']}"]
                                                                       if not r["passed"] else [])
        cells += [", ".join(failed) or "none", f"{r['wall_s']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def seeds_all(data: dict) -> str:
    made = [key for name, key in MAKE_BENCH if name == "seeds"]  # `make bench`'s sweeps in its order, then others
    sweeps = dict(sorted(data.get("sweeps", {}).items(), key=lambda kv: (kv[0] not in made,
                                                                          made.index(kv[0]) if kv[0] in made else 0)))
    if not sweeps:
        raise Missing("bench/results/seeds.json holds no sweep: run `python bench/bench_seeds.py`")
    machines = {machine(s) for s in sweeps.values()}
    one = len(machines) == 1
    head = ["each run", "every claim held", "sweep", "median run", "measured", "load average",
            *([] if one else ["machine"])]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for s in sweeps.values():
        n, of = held(s)
        lo, hi = s["seeds"]
        cells = [f"`{run_command(s)}`", f"**{n} of {of}** (seeds {lo}–{hi})",
                 f"{duration(s['wall_s'])}, {at_a_time(s)}", f"{median_run(s):g} s", s["measured"],
                 load_text(s, ""), *([] if one else [machine(s)])]
        lines.append("| " + " | ".join(cells) + " |")
    where = f"on {machines.pop()}" if one else "on the machines in the last column"
    nices = {s["nice"] for s in sweeps.values()}
    lines += ["", f"By `python bench/bench_seeds.py` (`make bench`), {where}, at nice {', '.join(map(str, nices))}; "
              "wall times grow with the load (1-minute load averages, before and after each sweep)."]
    return "\n".join(lines) + "\n"


def seeds(data: dict, *key: str) -> str:
    return seeds_one(data, " ".join(key)) if key else seeds_all(data)


# --- the other benches ----------------------------------------------------------------------------------------------

def mnist(d: dict) -> str:
    variants = list(d["runs"][0]["quiet"])
    naive = d["naive_samples_per_s"]
    each = {r["label"]: r.get("naive_samples_per_s", naive) for r in d["runs"]}  # older files: one naive figure
    if any("naive_samples_per_s" in r for r in d["runs"]):  # one naive figure per row, with that row's threads
        same = ", with each row's threads: " + ", ".join(
            f"**{each[r['label']]:,.0f} samples/s** ({r['threads']} thread{'s' * (r['threads'] > 1)})"
            for r in d["runs"])
    else:
        same = f": **{naive:,.0f} samples/s**"
    lines = [f"On {d['data']} ({d['train_images']:,} training images, {d['epochs']} epochs of batch {d['batch']}); the "
             f"naive DataLoader loop, quiet, in the same run{same}. {measured(d)}; "
             f"{duration(d['wall_s'])} in all. \"Quiet\": with no busy program of the bench's own (the machine's "
             f"load is the load average above); \"busy\": beside {d['busy_programs']} Python loops that each spin a "
             "CPU.", ""]
    head = ["loop", "threads", "quiet samples/s", "× naive", "target", f"+{d['busy_programs']} busy samples/s",
            "busy slowdown", f"≤ {d['slowdown_target']:g}×"]
    lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in d["runs"]:
        for v in variants:
            ratio, slow = r["quiet"][v] / each[r["label"]], r["quiet"][v] / r["busy"][v]
            target = d["targets"][v]
            lines.append(f"| {v} | {r['label']} | {r['quiet'][v]:,.0f} | **{ratio:.1f}×** | ≥ {target}× "
                         f"{'✓' if ratio >= target else '✗'} | {r['busy'][v]:,.0f} | {slow:.2f}× | "
                         f"{'✓' if slow <= d['slowdown_target'] else '✗'} |")
    return "\n".join(lines) + "\n"


def seconds(run: dict) -> str:
    if run["rc"] is None:
        return f"> {run['wall_s']:.0f} (stopped)"
    return f"{run['wall_s']:.1f}" + ("" if run["rc"] == 0 else f" (exit {run['rc']})")


def threads(d: dict) -> str:
    cpus = d["cpus"]
    lines = [f"Wall seconds of each lesson's default run, in a fresh process (start-up included), with gradlab's one "
             f"thread and with torch's default of one per CPU (`--threads {cpus}`), quiet and beside busy programs "
             f"(Python loops that each spin a CPU). {measured(d)}; {duration(d['wall_s'])} in all.",
             ""]
    head = ["lesson", "quiet", "+1 busy", "+2 busy", "+2 busy / quiet", f"`--threads {cpus}`: quiet", "+2 busy",
            "+2 busy / quiet", "quiet vs `--threads " + str(cpus) + "`"]
    lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in d["rows"]:
        ours, base = r["ours"], r["baseline"]
        bound = "> " if base[1]["rc"] is None else ""  # stopped at its timeout: at least that
        lines.append(f"| {r['lesson']} | " + " | ".join(seconds(x) for x in ours)
                     + f" | **{ours[2]['wall_s'] / ours[0]['wall_s']:.2f}×** | {seconds(base[0])} | "
                     f"{seconds(base[1])} | {bound}{base[1]['wall_s'] / base[0]['wall_s']:.1f}× | "
                     f"{ours[0]['wall_s'] / base[0]['wall_s'] - 1:+.0%} |")
    return "\n".join(lines) + "\n"


def check(d: dict) -> str:
    kinds = {"answer": "model answer", "starter": "starter", "wrong": "a wrong answer", "syntax": "syntax error"}
    lines = [f"Seconds per `gradlab check FILE --quiet` in a fresh process, wall (and CPU, gradlab's process and the "
             f"submission's together). {measured(d)}; {duration(d['wall_s'])} in all. A ! marks an unexpected exit "
             "code (0 for the model answer, 1 for the others).", ""]
    head = ["exercise", *kinds.values(), f"≤ {d['target_s']:g} s"]
    lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in d["rows"]:
        cells = [f"{r[k]['wall_s']:.1f} ({r[k]['cpu_s']:.1f}){'' if r[k]['rc'] == r[k]['expected_rc'] else ' !'}"
                 for k in kinds]
        worst = max(r[k]["wall_s"] for k in kinds)
        lines.append(f"| {r['exercise']} | " + " | ".join(cells) + f" | {'✓' if worst <= d['target_s'] else '✗'} |")
    return "\n".join(lines) + "\n"


def gpu(d: dict) -> str:
    if d.get("skipped"):
        return (f"Not measured: the last `{d['command']}` ran on {machine(d)} ({d['measured']}): "
                f"{d['skipped']}.\n")
    lines = [f"On {d['data']} ({d['train_images']:,} training images, {d['epochs']} epochs), samples/s of each "
             f"training loop, {d['cpu_threads']} CPU thread(s) against {d['gpu']}. {measured(d)}.", ""]
    head = ["variant", "CPU", "CUDA (graphs)", "× CPU", f"≥ {d['target']}×", "CUDA eager", "× CPU"]
    lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for v, r in d["samples_per_s"].items():
        ratio = r["cuda_graphs"] / r["cpu"]
        lines.append(f"| {v} | {r['cpu']:,.0f} | {r['cuda_graphs']:,.0f} | {ratio:.1f} | "
                     f"{'✓' if ratio >= d['target'] else '✗'} | {r['cuda_eager']:,.0f} | "
                     f"{r['cuda_eager'] / r['cpu']:.2f} |")
    return "\n".join(lines) + "\n"


def sandbox(d: dict) -> str:
    mode = f"{d['mode']} ({d['why']})" if d["why"] else d["mode"]
    lines = [f"Milliseconds, the least and the median of each variant's rounds (a noisy neighbour slows every variant "
             f"alike; the least is the figure to trust on a shared machine); the sandbox here: {mode}. "
             f"{measured(d)}.", ""]
    lines += ["| what | rounds | least ms | median ms |", "| --- | --- | --- | --- |"]
    lines += [f"| {r['what']} | {r['rounds']} | {r['min_ms']:,.1f} | {r['median_ms']:,.1f} |" for r in d["rows"]]
    return "\n".join(lines) + "\n"


def total(results: Path = RESULTS) -> str:
    """`make bench`'s parts with the wall time each took when last run, and their sum. A part last run with other
    arguments than the Makefile's (one exercise, the small data) is named apart and not added; so is one never run."""
    lines = ["| part of `make bench` | wall time | measured | load average |", "| --- | --- | --- | --- |"]
    spent, missing, other, spans = 0.0, [], [], []
    for name, key in MAKE_BENCH:
        path = results / f"{name}.json"
        d = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        if key is not None:
            d = d.get("sweeps", {}).get(key, {})
        if not d:
            missing.append(f"`bench/{SCRIPT[name]}`" + (f" ({key})" if key else ""))
            continue
        if key is None and d["command"] != f"python bench/{SCRIPT[name]}":
            other.append(f"`{d['command']}` ({duration(d['wall_s'])}, {d['measured']})")
            continue
        what = f"`{sweep_command(d)}`" if key else f"`{d['command']}`"
        spent += d["wall_s"]
        start = datetime.datetime.strptime(d["measured"], "%Y-%m-%d %H:%M UTC").timestamp()
        spans.append((start, start + d["wall_s"]))
        lines.append(f"| {what} | {duration(d['wall_s'])} | {d['measured']} | {load_text(d, '')} |")
    spans.sort()
    overlap = any(b[0] < a[1] - 60 for a, b in itertools.pairwise(spans))  # `measured` is to the minute
    lines += ["", f"In all **{duration(spent)}** for the parts above, each as last measured (bench/results/*.json), "
              "under the load shown" + ("; some of them ran at the same time (their start and wall time overlap), "
                                        "each slower for it." if overlap else ".")]
    if other:
        lines += ["", f"Last run only with other arguments than `make bench`'s, so not added: {'; '.join(other)}."]
    if missing:
        lines += ["", f"Not measured yet: {', '.join(missing)}."]
    return "\n".join(lines) + "\n"


RENDER: dict[str, Callable[..., str]] = {"seeds": seeds, "mnist": mnist, "threads": threads, "check": check,
                                         "gpu": gpu, "sandbox": sandbox}


def render(spec: str, results: Path = RESULTS) -> str:
    """The Markdown of a `<!-- bench: SPEC -->` block; raises Missing (its message says what to run) when its JSON
    is not there and ValueError for a SPEC no renderer knows."""
    name, *args = spec.split()
    if name == "total" and not args:
        return total(results)
    if name not in RENDER:
        raise ValueError(f"<!-- bench: {spec} -->: no such bench; one of {', '.join([*RENDER, 'total'])}")
    return RENDER[name](load(name, results), *args)
