"""How long `gradlab check` takes, as a student runs it: one fresh process per exercise, start-up included, on the
model answer (every check runs; no diagnosis is needed) and on the untouched starter. Target (issue "Practice"):
at most 5 s on 2 cores. Printed, not asserted."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from gradlab.practice import EXERCISES, answer_source
from gradlab.practice.check import HEADER, starter


def timed(path: Path) -> tuple[float, int]:
    start = time.perf_counter()
    code = subprocess.run([sys.executable, "-m", "gradlab", "check", str(path), "--quiet"]).returncode
    return time.perf_counter() - start, code


def main() -> None:
    table = Table(title="gradlab check: seconds per exercise (fresh process, start-up included)", title_justify="left")
    for col in ("exercise", "model answer", "exit", "starter", "exit", "≤ 5 s"):
        table.add_column(col, justify="left" if col == "exercise" else "right")
    with tempfile.TemporaryDirectory() as tmp:
        for name, ex in EXERCISES.items():
            answer, todo = Path(tmp, f"{ex.function}.py"), Path(tmp, f"{ex.function}_starter.py")
            answer.write_text(f"{HEADER}# gradlab-exercise: {name}\n{answer_source(EXERCISES[name])}")
            todo.write_text(starter(ex))
            (a, a_code), (s, s_code) = timed(answer), timed(todo)
            table.add_row(name, f"{a:.1f}", str(a_code), f"{s:.1f}", str(s_code), "✓" if max(a, s) <= 5 else "✗")
    Console(highlight=False, width=120).print(table)


if __name__ == "__main__":
    main()
