"""Measure every lesson's run time and write gradlab/runtimes.json, which `gradlab list` shows.

Each lesson is run as a user runs it, in a fresh process (start-up included): its default command (the data
lessons on the bundled sample, offline) and its `gradlab all --quick` budget; then `gradlab all --quick` as a
whole. Run it on a quiet machine (`make runtimes`) and commit the file: the figures are measurements, never typed.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

from gradlab.lessons import LESSONS

OUT = Path(__file__).resolve().parent.parent / "gradlab" / "runtimes.json"
GRADLAB = [sys.executable, "-m", "gradlab"]
OFFLINE_SAMPLE = {"dataset": "mnist-sample", "offline": True}  # the default run, on the bundled data


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run([*GRADLAB, *args], capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"runtimes: `gradlab {' '.join(args)}` exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return round(wall, 1)


def main() -> None:
    load = round(os.getloadavg()[0], 2)
    lessons = {}
    for name, info in LESSONS.items():
        default, quick = (OFFLINE_SAMPLE if info.needs_data else {}), info.quick
        lessons[name] = {"default_s": timed([*info.args(default), "--quiet"]), "default_cmd": info.command(default),
                         "quick_s": timed([*info.args(quick), "--quiet"]), "quick_cmd": info.command(quick)}
        print(f"{name:16s} default {lessons[name]['default_s']:6.1f} s   quick {lessons[name]['quick_s']:6.1f} s")
    all_quick = timed(["all", "--quick", "--quiet"])
    print(f"gradlab all --quick: {all_quick:.1f} s")
    data = {"measured": datetime.date.today().isoformat(), "cpus": os.cpu_count(), "torch": torch.__version__,
            "load_average_before": load, "all_quick_s": all_quick, "lessons": lessons}
    OUT.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
