"""How long `gradlab check` takes, as a student runs it: one fresh process per exercise, start-up included, on the
model answer (every check runs; no diagnosis is needed), on the untouched starter, on a wrong answer that is not a
known mistake (the diagnosis runs its experiments) and on a syntax error (the pre-flight stops it before any
process starts). Target (issue #29): at most 3 s on 2 cores. The CPU seconds (gradlab's process and the
submission's together) are printed beside the wall time: on a busy machine the wall time grows, the CPU time much
less. Printed, not asserted, and written to bench/results/check.json (bench/record.py), which the docs render.

    python bench/bench_check.py [NAME ...]
"""

from __future__ import annotations

import os
import resource
import shlex
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import record
from rich.console import Console
from rich.table import Table

from gradlab.practice import all_exercises, answer_source
from gradlab.practice.classroom.starter import HEADER, starter

TARGET_S = 3.0


def timed(path: Path) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the check and every process it waited for, exit code)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    code = subprocess.run([sys.executable, "-m", "gradlab", "check", str(path), "--quiet"]).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, code


def wrong_source(name: str) -> str:
    """A realistic wrong answer that is not a known mistake (so the diagnosis runs its experiments): the first wrong
    file of the student corpus (tests/practice_corpus/), or the first unknown mistake of tests/test_diagnosis.py."""
    tests = Path(__file__).resolve().parent.parent / "tests"
    corpus = sorted((tests / "practice_corpus" / name).glob("wrong_*.py"))
    if corpus:
        return corpus[0].read_text(encoding="utf-8")
    sys.path.insert(0, str(tests))
    from test_diagnosis import UNKNOWN

    source = next(textwrap.dedent(src) for ex, _, src, _ in UNKNOWN if ex == name)
    return f"# gradlab-exercise: {name}\n{HEADER}{source}"


def main() -> None:
    names = [n for n in all_exercises() if not sys.argv[1:] or any(a in n for a in sys.argv[1:])]
    if not names:
        sys.exit(f"bench_check: no exercise's name contains {' or '.join(sys.argv[1:])}; usage: python "
                 f"bench/bench_check.py [PART OF A NAME ...], e.g. critic_update (`gradlab exercises` lists them)")
    header, start = record.machine(), time.perf_counter()
    rows = []
    table = Table(title=f"gradlab check: seconds per exercise, wall (CPU of both processes), fresh process, on "
                        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}", title_justify="left")
    for col in ("exercise", "model answer", "starter", "a wrong answer", "syntax error", f"≤ {TARGET_S:g} s"):
        table.add_column(col, justify="left" if col == "exercise" else "right")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            ex = all_exercises()[name]
            files = {"answer": f"{HEADER}# gradlab-exercise: {name}\n{answer_source(ex)}", "starter": starter(ex),
                     "wrong": wrong_source(name),
                     "syntax": f"# gradlab-exercise: {name}\ndef {ex.function}(:\n    pass\n"}
            cells, worst, row = [], 0.0, {"exercise": name}
            for kind, text in files.items():
                path = Path(tmp, f"{ex.function}_{kind}.py")
                path.write_text(text, encoding="utf-8")
                wall, cpu, code = timed(path)
                worst = max(worst, wall)
                expected = 0 if kind == "answer" else 1
                cells.append(f"{wall:.1f} ({cpu:.1f}){'' if code == expected else ' !'}")
                row[kind] = {"command": shlex.join(["gradlab", "check", path.name, "--quiet"]),
                             "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "rc": code, "expected_rc": expected}
            rows.append(row)
            table.add_row(name, *cells, "✓" if worst <= TARGET_S else "✗")
    Console(highlight=False, width=130).print(table)
    print("a ! marks an unexpected exit code (0 for the model answer, 1 for the others)")
    print("wrote", record.write("check", {**header, "load_average_after": record.load(), "command": record.command(),
                                          "wall_s": round(time.perf_counter() - start, 1), "target_s": TARGET_S,
                                          "rows": rows}))


if __name__ == "__main__":
    main()
