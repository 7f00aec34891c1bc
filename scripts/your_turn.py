"""Rewrite the "Your turn" section of every notebook from the exercises' declarations (nbformat; outputs stay empty).

    python scripts/your_turn.py

For each lesson's notebook, everything from the "## Your turn" heading on is replaced by: the heading and its
paragraph, one imports cell, and per exercise (in the order `gradlab exercises` lists them) a heading with its level
and one line, its starter cell (metadata "gradlab-exercise": NAME, which scripts/notebooks.py --answers fills with
the model answer, asserting after its check that it passes) and a check cell whose Result keeps its own name
(check_FUNCTION), so that re-running an earlier cell of the lesson still finds the lesson's `r`. Cells before the
heading are left as they are.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"

INTRO = ("## Your turn\n\nWrite the gradient code yourself. Fill in the function below and run the check after it: "
         "gradlab runs your function in a separate process on generated inputs (edge cases included), compares it "
         "with the reference and runs the lesson's claims on it; when your answer is wrong, it says which known "
         "mistake it makes, or what it measured about it (which output is wrong, by what factor, for which inputs), "
         "and how to fix it. What your function printed is shown under the checks. `gradlab exercise NAME` writes "
         "the same exercise as a file, for `gradlab check FILE`.")


def starter_cell(exercise) -> str:
    """The exercise's starter, as a cell: the signature, the docstring, a body that raises NotImplementedError."""
    from gradlab.practice.classroom.starter import starter

    text = starter(exercise)
    return text[text.index(exercise.signature):].rstrip()


def check_cell(exercise) -> str:
    name = f"check_{exercise.function}"
    return f'{name} = gradlab.check({exercise.function}, "{exercise.name}")\n{name}'


def your_turn(lesson: str) -> list:
    from gradlab.practice import all_exercises

    mine = [e for e in all_exercises().values() if e.lesson == lesson]
    uses_torch = any(e.signature.startswith("class ") for e in mine)  # a starter class names torch itself
    cells = [nbformat.v4.new_markdown_cell(INTRO),
             nbformat.v4.new_code_cell("import math  # noqa: F401 - what the exercises may use\n\n"
                                       f"import torch{'' if uses_torch else '  # noqa: F401'}\n"
                                       "import torch.nn.functional as F  # noqa: F401")]
    for e in mine:
        cells.append(nbformat.v4.new_markdown_cell(f"**`{e.name}`** (level {e.level}): {e.what}."))
        cell = nbformat.v4.new_code_cell(starter_cell(e))
        cell.metadata["gradlab-exercise"] = e.name
        cells += [cell, nbformat.v4.new_code_cell(check_cell(e))]
    return cells


def main() -> None:
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        start = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
                     and c.source.startswith("## Your turn"))
        lesson = path.stem.split("-", 1)[1]
        new = your_turn(lesson)
        for old, cell in zip(nb.cells[start:], new, strict=False):  # keep the ids of the cells that stay
            if old.cell_type == cell.cell_type:
                cell.id = old.id
        nb.cells[start:] = new
        nbformat.validate(nb)
        nbformat.write(nb, path)
        print(f"{path.name}: {sum('gradlab-exercise' in c.metadata for c in new)} exercises")


if __name__ == "__main__":
    sys.exit(main())
