"""Check that a change leaves every lesson's results as they were (gradlab's refactoring guard).

    python scripts/same_results.py capture OUT          # run every lesson, default and --quick budgets, save JSON
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
from pathlib import Path

from gradlab.lessons import LESSONS

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
    d = sub.add_parser("compare")
    d.add_argument("old", type=Path)
    d.add_argument("new", type=Path)
    args = parser.parse_args()
    if args.command == "capture":
        return capture(args.out, args.lessons.split(","))
    return compare(args.old, args.new)


if __name__ == "__main__":
    sys.exit(main())
