"""The starter file of an exercise (`gradlab exercise NAME`): what the student fills in."""

from __future__ import annotations

import inspect
import textwrap

from gradlab.kit.exercise import Exercise

HEADER = "import math\n\nimport torch\nimport torch.nn.functional as F\n\n"  # above a model answer, as a file


def starter(exercise: Exercise, file: str | None = None) -> str:
    """The starter file: the signature, the math, the shapes, the TF-1 line, a body that raises NotImplementedError,
    and the command that checks it (FILE: the name the course gives the file, default FUNCTION.py)."""
    file = file or f"{exercise.function}.py"
    doc = textwrap.indent(inspect.cleandoc(exercise.doc), "    ")  # the text's own indentation kept (its formulas'
    # continuation lines, a list's items): it was stripped from every line
    if exercise.signature.startswith("class "):  # a torch.autograd.Function: its forward and its backward
        body = "".join(f'\n    @staticmethod\n    def {name}(ctx, {arg}):\n        raise NotImplementedError('
                       f'"write {exercise.function}.{name}")\n'
                       for name, arg in (("forward", exercise.forward), ("backward", "dy")))
    else:
        body = f'    raise NotImplementedError("write {exercise.function}")\n'
    head = textwrap.fill(f"gradlab exercise {exercise.name} (level {exercise.level}): {exercise.what}.", 110)
    rule = "" if not exercise.forbidden else textwrap.fill(
        f"Write it yourself: this exercise is to write what {', '.join(exercise.forbidden)} "
        f"{'does' if len(exercise.forbidden) == 1 else 'do'} for you, so calling "
        f"{'it' if len(exercise.forbidden) == 1 else 'one of them'} fails a check of its own.", 110) + "\n\n"
    graph = "" if exercise.no_autograd or exercise.on_workers else (
        f"\nand see your backward pass beside the reference's (the first node whose gradient differs marked):\n\n"
        f"    gradlab check {file} --graph {file.rsplit('.', 1)[0]}.html\n")
    how = (f"then check it:\n\n    gradlab check {file}\n{graph}" if not exercise.package else
           f"then hand it in as {file}: your teacher checks it with the course's own checks,\n\n    gradlab check "
           f"{file} --course course.toml\n")
    return (f'"""{head}\n\n{rule}'
            f"Write the body of {exercise.function} below, {how}"
            f'"""\n\n# gradlab-exercise: {exercise.name}\n'
            "import torch\nimport torch.nn.functional as F\n\n\n"
            f'{exercise.signature}\n    """{doc.lstrip()}\n    """\n{body}')
