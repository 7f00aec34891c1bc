"""How often the departure line (gradlab/practice/judging/departure.py) is said, and whether it names the planted
mistake's line, over both student corpora (tests/practice_corpus, tests/practice_corpus_blind).

    PYTHONPATH=. python scripts/departure_figures.py [--json FILE] [FILTER]

Each file is run as tests/inprocess.py runs it (the child's harness call, in this process, its operations traced as
the sandbox's child traces them), seed 0. A right answer is run through the rule once per input as if that input had
failed (every output of it taken for wrong): each line it would name is a false pointer. A wrong answer is judged as
gradlab check judges it, and the line its diagnosis names is compared with the planted mistake's line
(tests/practice_corpus_blind/SOURCE.md; the other corpus gives no lines: its lines are printed to be read)."""

from __future__ import annotations

import json
import re
import runpy
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from inprocess import judged, outputs_of, reference  # noqa: E402

from gradlab.kit.exercise import values  # noqa: E402
from gradlab.practice import all_exercises  # noqa: E402
from gradlab.practice.classroom import course  # noqa: E402
from gradlab.practice.judging import departure  # noqa: E402

CORPORA = [ROOT / "tests" / "practice_corpus", ROOT / "tests" / "practice_corpus_blind"]
SAID = re.compile(r"your line (\d+) `")


def planted_lines() -> dict[str, int]:
    """{exercise/file: the planted mistake's line} from the blind corpus's SOURCE.md (its paths are renamed)."""
    lines = {}
    for row in (ROOT / "tests" / "practice_corpus_blind" / "SOURCE.md").read_text().splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[2] == "wrong" and cells[4].isdigit():
            stem = cells[0].partition("/")[2]
            lines[f"{cells[1]}/{stem.removesuffix('.py')}"] = int(cells[4])
    return lines


def _right(name: str, fn) -> list[str]:
    got = outputs_of(name, fn)
    if not got.ok or not got.traced:
        return []
    ref = reference(name)
    mine, refs = [values(o) for o in got.outputs], [values(r) for r in ref.outputs]
    bounds = [all_exercises()[name].claims[c["kind"]][1] for c in ref.cases]
    said = []
    for i in range(len(ref.cases)):
        passed = [k != i for k in range(len(ref.cases))]
        words = departure.departure(ref.checks, ref.cases, mine, refs, passed, bounds, got.traced, suppose_wrong=True,
                                        exercise=name)
        if words:
            said.append(words)
    return said


def main(argv: list[str]) -> None:
    out = argv[argv.index("--json") + 1] if "--json" in argv else None
    pattern = next((a for a in argv if not a.startswith("--") and a != out), "")
    course.read(str(ROOT / "teacher" / "graded" / "course.toml"))  # the teacher kit's graded variants
    planted, rows = planted_lines(), []
    for corpus in CORPORA:
        for path in sorted(corpus.glob("*/*.py")):
            key = f"{path.parent.name}/{path.stem}"
            if pattern not in str(path):
                continue
            name = path.parent.name
            fn = runpy.run_path(str(path), run_name="student").get(all_exercises()[name].function)
            start = time.perf_counter()
            row = {"file": str(path.relative_to(ROOT)), "right": path.name.startswith("right_")}
            if row["right"]:
                said = _right(name, fn)
                row["said"] = said
            else:
                diagnosis = judged(name, fn).metrics.get("diagnosis", "")
                found = SAID.search(diagnosis) if "traced beside the reference" in diagnosis else None
                row["said"] = [diagnosis[found.start():]] if found else []
                row["line"] = int(found[1]) if found else None
                row["planted"] = planted.get(key.replace("wrong_", "", 1)) if corpus.name.endswith("blind") else None
            row["s"] = round(time.perf_counter() - start, 3)
            rows.append(row)
            mark = "" if not row["said"] else (" RIGHT-POINTER" if row["right"] else
                                               f" line {row['line']} (planted {row['planted']})")
            print(f"{row['file']}{mark}", flush=True)
            for s in row["said"]:
                print("   ", s[:300])
    right = [r for r in rows if r["right"]]
    wrong = [r for r in rows if not r["right"]]
    pointed = [r for r in wrong if r["said"]]
    known = [r for r in pointed if r["planted"] is not None]
    print(f"\nright answers: {len(right)}, a line named on any input: {sum(bool(r['said']) for r in right)}")
    print(f"wrong answers: {len(wrong)}, a line named: {len(pointed)}; of those with a planted line "
          f"({len(known)}): the planted line {sum(r['line'] == r['planted'] for r in known)}, another "
          f"{sum(r['line'] != r['planted'] for r in known)}")
    if out:
        Path(out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
