"""Practice: students write the gradient code, and `gradlab check` grades it with the lesson's own claims.

Each lesson declares its exercises in its own folder, gradlab/lessons/<lesson>/exercises/: their texts
(__init__.py), how a submission is called (harness.py), the references, known mistakes and claims (checks.py) and
model answers (answers.py); the vocabulary they are written in is gradlab/kit/exercise.py. This index collects
them from the lesson registry and imports nothing heavy (`gradlab exercises` and the starter files read it). The
student's code runs in a sandbox (gradlab/practice/sandbox/box.py, isolated by gradlab/practice/sandbox/box.py)
with the
exercise's harness alone; the reference values are computed here, in the gradlab process, so code under test cannot
make a check pass by changing gradlab.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect

from gradlab.errors import GradlabError
from gradlab.kit.exercise import Exercise
from gradlab.lessons import LESSONS


@functools.cache
def all_exercises() -> dict[str, Exercise]:
    """{name: Exercise}: every lesson's exercises, lesson by lesson in teaching order, by level within a lesson,
    collected on first use (it imports each lesson's exercises/ texts, not torch). A course's own exercises are
    added to this dict when its course file is read (gradlab.practice.classroom.own)."""
    found = []
    for info in LESSONS.values():
        module = importlib.import_module(f"{info.package}.exercises")
        found += sorted((dataclasses.replace(e, lesson=info.name) for e in module.EXERCISES), key=lambda e: e.level)
    return {e.name: e for e in found}


def _package(exercise: Exercise) -> str:
    """The package EXERCISE's files are in: its lesson's exercises/, or a teacher's folder
    (gradlab.practice.classroom.own)."""
    return exercise.package or f"{LESSONS[exercise.lesson].package}.exercises"


def _module(exercise: Exercise, part: str):
    return importlib.import_module(f"{_package(exercise)}.{part}")


def harness_module(exercise: Exercise) -> str:
    """The module that calls a submission of EXERCISE (the only part of it that runs beside the submission)."""
    return f"{_package(exercise)}.harness"


def checks_of(exercise: Exercise):
    """EXERCISE's Checks: its harness, reference, known mistakes and claims (imports torch)."""
    return _module(exercise, "checks").CHECKS[exercise.function]


def answer(exercise: Exercise):
    """EXERCISE's model answer: the function (or class) itself, from its lesson's exercises/answers.py. The answers
    are in the repository only, not in the wheel a class installs (pyproject.toml's exclude)."""
    try:
        module = _module(exercise, "answers")
    except ModuleNotFoundError as e:
        if not e.name or not e.name.endswith(".answers"):
            raise
        raise GradlabError(f"the model answer of {exercise.name} is not in an installed gradlab (the wheel leaves the "
                           "answers out); it is in the repository, gradlab/lessons/*/exercises/answers.py") from None
    return getattr(module, exercise.function)


def answer_source(exercise: Exercise) -> str:
    """The model answer's source, as a student would write it in a file or a notebook cell."""
    return inspect.getsource(answer(exercise))


def listing() -> list[dict]:
    """Every exercise as {"name", "lesson", "function", "level", "what"}: `gradlab exercises` and the API."""
    return [{"name": e.name, "lesson": e.lesson, "function": e.function, "level": e.level, "what": e.what}
            for e in all_exercises().values()]
