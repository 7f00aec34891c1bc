"""Check that a change leaves every lesson's results as they were (gradlab's refactoring guard).

    python scripts/same_results.py capture OUT          # run every lesson, default and --quick budgets, save JSON
    python scripts/same_results.py texts OUT            # every --help text and the bad inputs' messages
    python scripts/same_results.py checks OUT           # `gradlab check` of every corpus file: verdict, diagnosis
    python scripts/same_results.py compare OLD NEW      # the two captures agree, timings aside (exit 1 if not)

Capture the commit before a change (e.g. from a `git worktree` of it: `PYTHONPATH=WORKTREE python
scripts/same_results.py capture /tmp/before`), then the change, and compare. Every lesson runs from a fresh
`python -m gradlab LESSON [--quick] --json FILE --quiet` on the bundled data (--offline), one at a time: the
seeded CPU runs repeat bit for bit, so claims, metrics, tables and curves must be equal to the last digit.
What is measured in seconds (wall times, speed tables, timing curves) differs from run to run and is left out.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from gradlab.lessons import LESSONS

ROOT = Path(__file__).resolve().parent.parent

NEEDS_DATA = {name for name, info in LESSONS.items() if info.needs_data}
BUDGETS = {"default": [], "quick": ["--quick"]}

# What is measured in seconds (or names a process or port of this run) differs from run to run: keys ending in
# these, table columns whose header ends in these, and curves plotted against them.
VOLATILE_KEYS = ("_s", "_ms", "pid", "rendezvous")
VOLATILE_COLUMNS = (" s", "/s", " ms", "ms/step", "comm %")
PORT = re.compile(r"127\.0\.0\.1:\d+")


def capture(out: Path, lessons: list[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name in lessons:
        for budget, extra in BUDGETS.items():
            target = out / f"{name}-{budget}.json"
            args = [sys.executable, "-m", "gradlab", name, *extra, "--json", str(target), "--quiet"]
            if name in NEEDS_DATA:
                args.append("--offline")
            code = subprocess.run(args, env={**os.environ, "PYTHONHASHSEED": "0"}).returncode
            print(f"{name:16} {budget:8} exit {code}", flush=True)
            failed += code not in (0, 1)
    return 1 if failed else 0


# Bad input of every kind the front ends take: (how it is given, the arguments). Each must keep its one line and
# its exit code 2 through a change. "api" runs gradlab.run(LESSON, **KWARGS) with the arguments as a Python literal.
BAD_INPUTS = [
    ("cli", ["mnist", "--lr", "0"]),
    ("cli", ["mnist", "--lr", "nan"]),
    ("cli", ["mnist", "--lr", "fast"]),
    ("cli", ["mnist", "--batch-size", "0"]),
    ("cli", ["mnist", "--batch-size", "5000", "--dataset", "mnist-sample"]),
    ("cli", ["mnist", "--epochs", "0"]),
    ("cli", ["mnist", "--epochs", "2.5"]),
    ("cli", ["mnist", "--train-size", "-1"]),
    ("cli", ["mnist", "--dataset", "cifar"]),
    ("cli", ["mnist", "--device", "tpu"]),
    ("cli", ["mnist", "--bogus"]),
    ("cli", ["mnist", "--optimizer", "--manual-grad"]),
    ("cli", ["mnsit"]),
    ("cli", ["mnist", "--config", "none.toml"]),
    ("cli", ["clip", "--clip-norm", "-1"]),
    ("cli", ["jacobian", "--sizes", "0"]),
    ("cli", ["log1pexp", "--x", "nan"]),
    ("cli", ["dqn", "--gamma", "2"]),
    ("cli", ["dqn", "--stop-grad", "--placeholder"]),
    ("cli", ["actor-critic", "--critic-lr", "-1"]),
    ("cli", ["gaussian-policy", "--samples", "0"]),
    ("cli", ["ddp", "--workers", "0"]),
    ("cli", ["ddp", "--batch-size", "100000000"]),
    ("cli", ["ddp", "--port", "70000"]),
    ("cli", ["log1pexp", "--dtype", "float8"]),
    ("cli", ["mnist", "--threads", "0"]),
    ("cli", ["show", "none.json"]),
    ("cli", ["step", "mnsit"]),
    ("cli", ["step", "log1pexp", "--node", "99"]),
    ("cli", ["exercise", "mnist.nope"]),
    ("cli", ["check", "none.py"]),
    ("cli", ["check", "--exercise", "x.y", "none.py"]),
    ("cli", ["grade", "none", "--out", "o"]),
    ("cli", ["grade", "--course", "none.toml", ".", "--out", "o"]),
    ("cli", ["notebooks"]),
    ("cli", ["report", "--json-dir"]),
    ("cli", ["all", "--bogus"]),
    ("cli", ["list", "--bogus"]),
    ("api", ("mnist", {"lr": -1})),
    ("api", ("mnist", {"epochs": "many"})),
    ("api", ("mnist", {"lrr": 0.1})),
    ("api", ("mnsit", {})),
    ("api", ("dqn", {"variant": "nope"})),
    ("api", ("clip", {"clip_norm": -1.0})),
    ("api", ("mnist", {"json_path": "x.json"})),
]


def texts(out: Path) -> int:
    """Every command's --help and every bad input's message (stderr) and exit code, as OUT/texts.json."""
    env = {**os.environ, "COLUMNS": "100", "PYTHONHASHSEED": "0", "NO_COLOR": "1"}
    commands = [[]] + [[c] for c in json.loads(subprocess.run(
        [sys.executable, "-c", "import json, gradlab.cli.main as c; print(json.dumps(list(c.cli.commands)))"],
        capture_output=True, text=True, env=env, check=True).stdout)]
    found = {}
    for command in commands:
        done = subprocess.run([sys.executable, "-m", "gradlab", *command, "--help"], capture_output=True, text=True,
                              env=env)
        found["help " + " ".join(command)] = [done.returncode, done.stdout, done.stderr]
    with tempfile.TemporaryDirectory() as empty:
        for kind, args in BAD_INPUTS:
            if kind == "cli":
                argv = [sys.executable, "-m", "gradlab", *args]
            else:
                argv = [sys.executable, "-c", "import sys, gradlab\nfrom gradlab.errors import GradlabError\n"
                        f"try: gradlab.run({args[0]!r}, **{args[1]!r})\n"
                        "except GradlabError as e: print(e, file=sys.stderr); sys.exit(2)"]
            done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=empty, timeout=120)
            found[f"{kind} {args}"] = [done.returncode, done.stderr.replace(empty, "EMPTY")]
            print(f"{kind} {args}: exit {done.returncode}", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "texts.json").write_text(json.dumps(found, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


CORPORA = [ROOT / "tests" / "practice_corpus", ROOT / "tests" / "practice_corpus_blind"]
GRADED = ROOT / "teacher" / "graded"


def checks(out: Path) -> int:
    """Every corpus file through the real `gradlab check FOLDER --seed 0 --json` (the sandbox, the judge, the
    diagnosis), one exercise's folder at a time; a graded variant's through a course file naming the teacher's
    exercise folder. What is kept: each file's exit code, claims, checks, diagnosis and notes (timings aside)."""
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for corpus in CORPORA:
        for folder in sorted(p for p in corpus.iterdir() if p.is_dir()):
            target = out / f"check-{corpus.name}-{folder.name}.json"
            with tempfile.TemporaryDirectory() as tmp:
                if "_graded." in folder.name:
                    variant = folder.name.split(".")[0]
                    course = Path(tmp) / "course.toml"
                    files = "\n".join(f'"{f.name}" = "{folder.name}"' for f in sorted(folder.glob("*.py")))
                    course.write_text(f'own = ["{GRADED / variant}"]\n[exercises]\n{files}\n', encoding="utf-8")
                    chosen = ["--course", str(course)]
                else:
                    chosen = ["--exercise", folder.name]
                run = subprocess.run([sys.executable, "-m", "gradlab", "check", str(folder), *chosen, "--seed", "0",
                                      "--json", str(target), "--quiet"], capture_output=True, text=True)
            ok = run.returncode in (0, 1) and target.exists()
            print(f"{corpus.name}/{folder.name:40} {'kept' if ok else 'FAILED: ' + run.stderr.strip()[-300:]}")
            failed += not ok
    return 1 if failed else 0


def strip(value):
    """VALUE without what is measured in seconds (see VOLATILE_KEYS and VOLATILE_COLUMNS); ports masked."""
    if isinstance(value, dict):
        if "columns" in value and "rows" in value:  # a table: drop its timing columns
            keep = [i for i, c in enumerate(value["columns"]) if not _timed(c)]
            value = {**value, "columns": [value["columns"][i] for i in keep],
                     "rows": [[row[i] for i in keep] for row in value["rows"]],
                     "formats": [value["formats"][i] for i in keep] if value.get("formats") else value.get("formats")}
        if "ylabel" in value and _timed(value["ylabel"]):
            return "<timing>"
        return {k: strip(v) for k, v in value.items() if not str(k).endswith(VOLATILE_KEYS)}
    if isinstance(value, list):
        return [strip(v) for v in value]
    if isinstance(value, str):
        return PORT.sub("127.0.0.1:PORT", value)
    return value


def _timed(header) -> bool:
    return str(header) == "ms" or str(header).endswith(VOLATILE_COLUMNS)


def diff(a, b, path="") -> list[str]:
    if type(a) is not type(b):
        return [f"{path}: {a!r} became {b!r}"]
    if isinstance(a, dict):
        out = [f"{path}/{k}: only before" for k in a.keys() - b.keys()]
        out += [f"{path}/{k}: only after" for k in b.keys() - a.keys()]
        for k in a.keys() & b.keys():
            out += diff(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items became {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in diff(x, y, f"{path}/{i}")]
    return [] if a == b else [f"{path}: {a!r} became {b!r}"]


def compare(old: Path, new: Path) -> int:
    names = sorted(p.name for p in old.glob("*.json"))
    bad = 0
    for name in names:
        if not (new / name).exists():
            print(f"{name}: missing from {new}")
            bad += 1
            continue
        a, b = (strip(json.loads((d / name).read_text(encoding="utf-8"))) for d in (old, new))
        found = diff(a, b)
        print(f"{name:28} {'same' if not found else f'{len(found)} differences'}")
        for line in found[:20]:
            print("   ", line)
        bad += bool(found)
    print(f"{len(names) - bad} of {len(names)} results the same (timings aside)")
    return 1 if bad or not names else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("capture")
    c.add_argument("out", type=Path)
    c.add_argument("--lessons", default=",".join(LESSONS))
    t = sub.add_parser("texts")
    t.add_argument("out", type=Path)
    k = sub.add_parser("checks")
    k.add_argument("out", type=Path)
    d = sub.add_parser("compare")
    d.add_argument("old", type=Path)
    d.add_argument("new", type=Path)
    args = parser.parse_args()
    if args.command == "capture":
        return capture(args.out, args.lessons.split(","))
    if args.command == "checks":
        return checks(args.out)
    if args.command == "texts":
        return texts(args.out)
    return compare(args.old, args.new)


if __name__ == "__main__":
    sys.exit(main())
