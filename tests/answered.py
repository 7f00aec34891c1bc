"""Which exercises a student's own installed gradlab answers: every function and class the wheel ships in a lesson's
folder (its lesson, its modules, its exercises' checks.py: the references among them) or that those import from
gradlab (the kit's global_norm), run through the exercise's
check in this process as a submission would be (its forbidden calls noted as the sandbox notes them). What passes
every check answers it. tests/test_grade.py keeps each lesson's passes_check (its LessonInfo) equal to what this
finds."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import torch

from gradlab.kit.exercise import Exercise
from gradlab.lessons import LESSONS
from gradlab.practice import all_exercises, checks_of
from gradlab.practice.inside import child
from gradlab.practice.judging.judge import Reference, judge
from gradlab.practice.sandbox.returned import Received

NOT_SHIPPED = (".answers",)  # the model answers: in the repository only (pyproject.toml's wheel exclude)
NOT_CANDIDATES = (".settings", ".harness")  # options, and how a submission is called: no answer in either
SKIPPED_NAMES = {"run"}  # a lesson's run(config): it trains; never an answer


def shipped(lesson: str) -> list:
    """The modules of LESSON's folder that the wheel ships, imported."""
    package = LESSONS[lesson].package
    names = [i.name for i in pkgutil.walk_packages(importlib.import_module(package).__path__, package + ".")]
    return [importlib.import_module(n) for n in [package, *names] if not n.endswith(NOT_SHIPPED + NOT_CANDIDATES)]


def fits(obj, exercise: Exercise) -> bool:
    """Whether OBJ has the shape of EXERCISE's answer: a torch.autograd.Function for a class, else a function of as
    many parameters as the exercise's signature."""
    if exercise.signature.startswith("class "):
        return inspect.isclass(obj) and issubclass(obj, torch.autograd.Function) and obj is not torch.autograd.Function
    try:
        return inspect.isfunction(obj) and len(inspect.signature(obj).parameters) == exercise.signature.count(",") + 1
    except (TypeError, ValueError):
        return False


def candidates(exercise: Exercise) -> dict[str, object]:
    """{module.name: object}: what a student could copy from their gradlab as EXERCISE's answer; the exercise's own
    known mistakes are left out (wrong by construction)."""
    wrong = {id(m.fn) for m in checks_of(exercise).mistakes if m.fn is not None}
    found = {}
    for module in shipped(exercise.lesson):
        for name, obj in list(vars(module).items()):  # its own, and gradlab's that it imports (the kit's global_norm)
            where = f"{getattr(obj, '__module__', None)}.{getattr(obj, '__qualname__', name)}"
            if (where.startswith("gradlab.") and name not in SKIPPED_NAMES and id(obj) not in wrong
                    and fits(obj, exercise)):
                found[where] = obj
    return found


def passes(exercise: Exercise, obj, reference: Reference) -> bool:
    """Whether OBJ, called on every input as the harness calls a submission, passes every check of EXERCISE. A call of
    a forbidden function from anywhere but the harness counts as the answer's (a student copying OBJ copies what it
    calls)."""
    checks = reference.checks
    forbidden = child.Forbidden(list(exercise.forbidden))
    ours = child._gradlab
    child._gradlab = lambda filename: filename.endswith(("harness.py", "child.py", "shared.py"))
    try:
        outputs = [checks.call(forbidden.watch(obj), case) for case in reference.cases]
    except Exception:
        return False
    finally:
        child._gradlab = ours
        forbidden.restore()
    return judge(exercise, reference, Received(ok=True, outputs=outputs, used=tuple(forbidden.used))).exit_code == 0


def answered(name: str) -> list[str]:
    """What answers exercise NAME among what the wheel ships, by its module.name: each candidate run on one input of
    each kind first (what fails there fails on all: a comparison's worst, or a rule's max or min, only gets worse with
    more inputs), then on all of them."""
    exercise = all_exercises()[name]
    checks = checks_of(exercise)
    cases = checks.cases(0)
    some = list({c["kind"]: c for c in reversed(cases)}.values())  # the first of each kind
    first = Reference(checks, some, [checks.run(None, c) for c in some])
    found = {where: obj for where, obj in candidates(exercise).items() if passes(exercise, obj, first)}
    if not found:
        return []
    reference = Reference(checks, cases, [checks.run(None, c) for c in cases])
    return [where for where, obj in found.items() if passes(exercise, obj, reference)]


if __name__ == "__main__":
    import time

    for exercise_name in all_exercises():
        started = time.monotonic()
        print(exercise_name, answered(exercise_name), f"{time.monotonic() - started:.1f} s", flush=True)
