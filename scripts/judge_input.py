"""What a judge reads of the blind corpus (tests/practice_corpus_blind/, #45): every wrong answer, the mistake its
writer intended (SOURCE.md, unchanged) and the diagnosis the current tree gives it, as JSON.

    python scripts/judge_input.py [OUT]          # OUT: /work/notes/judge-input.json unless given

Each file is judged in this process as tests/test_practice_corpus_blind.py judges it (tests/inprocess.py: the
sandbox child's harness call, seed 0, the teacher kit's graded variants loaded from teacher/graded/course.toml).
"diagnosis" is what the student is told: how the function stopped (an exception's line), the diagnosis, then the
notes, joined by '; '. The file is written whole or not at all.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "practice_corpus_blind"
DEFAULT = Path("/work/notes/judge-input.json")
ABOUT = ("Each wrong answer of tests/practice_corpus_blind/, the mistake its writer intended (SOURCE.md, unchanged; "
         "written_as: the writer's own verdict where the corpus files it otherwise, see the corpus README) and the "
         "diagnosis `gradlab check` gives it on this tree (judged in-process as the corpus test does, seed 0; "
         "scripts/judge_input.py). Verdicts to give: specific (names the intended mistake, or PyTorch's error at the "
         "student's line with advice that points at it), partly (the right area, or the intended cause among others "
         "it cannot tell apart), generic (only where the values differ), wrong (points at a different mistake).")


def intended() -> dict[tuple[str, str], dict]:
    """SOURCE.md's rows by (exercise, the file's name without its right_/wrong_ prefix)."""
    rows = {}
    for line in (CORPUS / "SOURCE.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if len(cells) != 5 or not cells[0].endswith(".py"):
            continue
        path, exercise, written_as, mistake, where = cells
        stem = re.sub(r"^(right|wrong)_", "", Path(path).name)
        rows[(exercise, stem)] = {"intended_mistake": mistake, "mistake_line": where, "written_as": written_as}
    return rows


def told(result) -> str:
    """What the check tells the student: how it stopped, the diagnosis, the notes, as one line, each part after a
    '; ' (the check shows them on lines of their own: joined by a space, they read as one run-on sentence)."""
    parts = [result.stopped or "", result.metrics.get("diagnosis") or "", *result.notes]
    return "; ".join(" ".join(p.split()) for p in parts if p)


def files() -> list[dict]:
    sys.path.insert(0, str(ROOT / "tests"))
    from inprocess import judged_file

    from gradlab.practice.classroom import course

    course.read(str(ROOT / "teacher" / "graded" / "course.toml"))
    source = intended()
    out = []
    for path in sorted(CORPUS.glob("*/wrong_*.py")):
        exercise = path.parent.name
        result = judged_file(str(path), exercise)
        out.append({"file": str(path.relative_to(ROOT)), "exercise": exercise,
                    **source[(exercise, path.name.removeprefix("wrong_"))],
                    "diagnosis": told(result), "exit_code": result.exit_code})
    return out


def write(target: Path, text: str) -> None:
    """TEXT to TARGET whole or not at all (a temporary file beside it, renamed over it)."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        print("usage: python scripts/judge_input.py [OUT]", file=sys.stderr)
        return 2
    target = Path(argv[0]) if argv else DEFAULT
    if not target.parent.is_dir():
        print(f"judge_input.py: {target.parent} is not a folder", file=sys.stderr)
        return 2
    found = files()
    write(target, json.dumps({"about": ABOUT, "files": found}, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(found)} wrong answers written to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
