"""A made-up class of 30 students to try `gradlab grade` on: right answers written several ways, the usual wrong ones,
untouched starters, syntax errors, an endless loop, missing files, and the layouts an LMS download or GitHub
Classroom clones have (a student's files one or two folders down).

    python scripts/make_class.py DIR        # writes DIR/course.toml and DIR/subs/<student>/...
    gradlab grade DIR/subs --course DIR/course.toml --out DIR/graded
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from gradlab.practice import all_exercises
from gradlab.practice.classroom.starter import starter

COURSE = """# Two exercises of the mnist lesson; softmax_grad is worth more (see the README's "Grading a course")
[grading]
points = 10

[exercises]
"softmax_grad.py" = "mnist.softmax_grad"
"sgd_step.py" = { exercise = "mnist.sgd_step", points = 5 }
"""

SOFTMAX = {  # what students hand in for mnist.softmax_grad: None is the untouched starter
    "right": "p = torch.softmax(x @ W + b, dim=1)\nd = (p - y) / x.shape[0]\nreturn x.T @ d, d.sum(dim=0)",
    "right-mean": "p = torch.softmax(x @ W + b, dim=1)\nreturn x.T @ (p - y) / len(x), (p - y).mean(0)",
    "no-B": "p = torch.softmax(x @ W + b, dim=1)\nreturn x.T @ (p - y), (p - y).mean(0)",
    "axis": "p = torch.softmax(x @ W + b, dim=0)\nreturn x.T @ (p - y) / len(x), (p - y).mean(0)",
    "naive-exp": "e = torch.exp(x @ W + b)\np = e / e.sum(1, keepdim=True)\nreturn x.T @ (p - y) / len(x), "
                 "(p - y).mean(0)",
    "sign": "p = torch.softmax(x @ W + b, dim=1)\nreturn x.T @ (y - p) / len(x), (y - p).mean(0)",
    "autograd": "W = W.clone().requires_grad_()\nb = b.clone().requires_grad_()\n"
                "cost = -(y * torch.log_softmax(x @ W + b, 1)).sum(1).mean()\n"
                "return torch.autograd.grad(cost, [W, b])",
    "loop": "while True:\n    pass",
    "syntax": "p = torch.softmax(x @ W + b, dim=1\nreturn p",
    "starter": None,
}
SGD = {  # and for mnist.sgd_step
    "right": "cost = -(y * F.log_softmax(x @ W + b, dim=1)).sum(dim=1).mean()\n"
             "gW, gb = torch.autograd.grad(cost, [W, b])\nreturn W - lr * gW, b - lr * gb",
    "summed": "cost = -(y * F.log_softmax(x @ W + b, dim=1)).sum()\n"
              "gW, gb = torch.autograd.grad(cost, [W, b])\nreturn W - lr * gW, b - lr * gb",
    "ascent": "cost = -(y * F.log_softmax(x @ W + b, dim=1)).sum(dim=1).mean()\n"
              "gW, gb = torch.autograd.grad(cost, [W, b])\nreturn W + lr * gW, b + lr * gb",
    "optim": "W, b = W.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()\n"
             "opt = torch.optim.SGD([W, b], lr=lr)\n"
             "(-(y * F.log_softmax(x @ W + b, dim=1)).sum(dim=1).mean()).backward()\nopt.step()\n"
             "return W.detach(), b.detach()",
    "starter": None,
}
# (student, their softmax_grad, their sgd_step, the folder their files are in): None is a file not handed in
CLASS = [
    ("ada", "right", "right", ""), ("ben", "right-mean", "right", "src"), ("cleo", "no-B", "right", ""),
    ("dev", "no-B", "summed", ""), ("eli", "axis", "right", ""), ("fay", "naive-exp", "right", "hw1/code"),
    ("gus", "sign", "ascent", ""), ("hal", "autograd", "right", ""), ("ivy", "loop", "right", ""),
    ("jo", "syntax", "summed", ""), ("kai", "starter", "starter", ""), ("lea", "right", None, ""),
    ("max", None, None, ""), ("nia", "no-B", "optim", ""), ("oli", "right", "summed", "src"),
    ("pia", "naive-exp", "summed", ""), ("quin", "axis", "ascent", ""), ("rae", "right", "optim", ""),
    ("sam", "no-B", "right", ""), ("tea", "right-mean", "right", ""), ("uma", "sign", "right", ""),
    ("vic", "right", "right", "repo"), ("wes", "no-B", None, ""), ("xia", "starter", "right", ""),
    ("yan", "right", "ascent", ""), ("zoe", "naive-exp", "optim", ""), ("abe", "no-B", "summed", ""),
    ("bea", "right", "right", ""), ("cal", "axis", "summed", ""), ("dot", "syntax", "right", ""),
]


def source(name: str, body: str | None) -> str:
    """The starter of exercise NAME with BODY written in (None: the untouched starter)."""
    text = starter(all_exercises()[name])
    if body is None:
        return text
    todo = f'    raise NotImplementedError("write {all_exercises()[name].function}")'
    return text.replace(todo, textwrap.indent(body, "    "))


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):  # --help, -h: the usage, not a folder named so
        sys.exit(__doc__)
    root = Path(sys.argv[1])
    (root / "subs").mkdir(parents=True, exist_ok=True)
    (root / "course.toml").write_text(COURSE)
    for student, softmax, sgd, inner in CLASS:
        folder = root / "subs" / student / inner
        folder.mkdir(parents=True, exist_ok=True)
        for name, file, kind, bodies in (("mnist.softmax_grad", "softmax_grad.py", softmax, SOFTMAX),
                                         ("mnist.sgd_step", "sgd_step.py", sgd, SGD)):
            if kind is not None:
                (folder / file).write_text(source(name, bodies[kind]))
    print(f"wrote {len(CLASS)} students in {root / 'subs'} and {root / 'course.toml'}")


if __name__ == "__main__":
    main()
