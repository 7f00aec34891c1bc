"""A teacher's own exercises, written in a course folder without editing gradlab: a folder laid out as a lesson's
exercises/ folder is (gradlab/lessons/<lesson>/exercises/), named in course.toml by `own = ["FOLDER"]`:

    FOLDER/__init__.py   EXERCISES = [Exercise(...)]: the text, signature, contract and claims
                         (gradlab.kit.exercise)
    FOLDER/harness.py    HARNESSES = {"function": Harness(cases=..., call=...)}: the inputs and how a function is
                         called; the only file that runs beside the submission, so it imports torch, the
                         standard library and gradlab.kit.harness, nothing else
    FOLDER/checks.py     CHECKS = {"function": Checks(harness=..., reference=..., mistakes=[...])}: the reference and
                         the known mistakes, on gradlab's side only (never in the sandbox)

Its exercises are named FOLDER.function (the folder's name is their lesson's) and are checked, diagnosed and graded as
gradlab's own are: the same sandbox, the same general experiments. The teacher's files are trusted (they run in
gradlab's process); the students' never are.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import re
import sys
import traceback
from pathlib import Path

from gradlab.errors import GradlabError
from gradlab.practice import all_exercises
from gradlab.practice.check import references

NAME = re.compile(r"^[a-z][a-z0-9_]*$")
PARTS = ("__init__.py", "harness.py", "checks.py")
HARNESS_MAY_IMPORT = ("torch", "gradlab.kit.harness")  # and the standard library


def package_of(lesson: str) -> str:
    """The module name a teacher's folder is imported as, here and (its harness alone) in the sandbox."""
    return f"gradlab_own_{lesson}"


def load(folder: Path, where: str) -> list[str]:
    """Import the teacher's exercises in FOLDER and add them to gradlab's (all_exercises()); their names. WHERE names
    the course file, for errors (one line each: a missing file, a harness that imports more than it may, …)."""
    lesson = folder.name
    if not folder.is_dir():
        raise GradlabError(f"{where}: own = {str(folder)!r} is not a folder (it is relative to the course file)")
    if not NAME.match(lesson):
        raise GradlabError(f"{where}: the folder name {lesson!r} must be a lowercase name (letters, digits, _): "
                           "it is the lesson part of its exercises' names")
    missing = [p for p in PARTS if not (folder / p).is_file()]
    if missing:
        raise GradlabError(f"{where}: {folder} has no {', '.join(missing)}; an own exercise needs __init__.py, "
                           "harness.py and checks.py (see examples/own-exercise)")
    _check_harness(folder / "harness.py", where)
    package = package_of(lesson)
    module = _import(folder, package, where)
    names = []
    for exercise in getattr(module, "EXERCISES", []):
        exercise = dataclasses.replace(exercise, lesson=lesson, package=package, folder=str(folder.resolve()))
        if exercise.name in all_exercises() and not all_exercises()[exercise.name].package:
            raise GradlabError(f"{where}: {exercise.name} is one of gradlab's exercises; name the folder otherwise")
        all_exercises()[exercise.name] = exercise
        names.append(exercise.name)
    if not names:
        raise GradlabError(f"{where}: {folder / '__init__.py'} declares no EXERCISES = [Exercise(...), ...]")
    for name in names:
        _self_test(name, where)
    return names


def _self_test(name: str, where: str) -> None:
    """The teacher's harness makes its inputs and checks.py's reference answers them (seed 0), before any student's
    file is graded: a mistake there is said in one line, with its file and line, instead of failing every check."""
    try:
        references(all_exercises()[name], 0)
    except Exception as e:
        ours = str(Path(__file__).resolve().parent.parent) + "/"  # gradlab's package: the frames above the teacher's
        frames = [f for f in traceback.extract_tb(e.__traceback__) if not f.filename.startswith(ours)]
        at = f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""
        raise GradlabError(f"{where}: {name}'s inputs or reference failed{at}: {type(e).__name__}: {e}; fix the "
                           "course's exercise (gradlab ran none of the students' files)") from None


def _import(folder: Path, package: str, where: str):
    """FOLDER as the package PACKAGE, with its checks.py (a mistake in the teacher's files is said in one line)."""
    try:
        if package not in sys.modules:
            spec = importlib.util.spec_from_file_location(package, folder / "__init__.py",
                                                          submodule_search_locations=[str(folder)])
            module = importlib.util.module_from_spec(spec)
            sys.modules[package] = module
            spec.loader.exec_module(module)
        return sys.modules[package]
    except Exception as e:
        sys.modules.pop(package, None)
        raise GradlabError(f"{where}: importing {folder / '__init__.py'} failed ({type(e).__name__}: {e})") from None


def _check_harness(path: Path, where: str) -> None:
    """The harness runs in the sandbox, where only torch, the standard library and gradlab.kit.harness exist."""
    try:
        tree = ast.parse(path.read_bytes(), str(path))
    except SyntaxError as e:
        raise GradlabError(f"{where}: {path} line {e.lineno}: {e.msg}") from None
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 ["." * node.level + (node.module or "")] if isinstance(node, ast.ImportFrom) else [])
        for name in names:
            if name.startswith(".") or (name.split(".")[0] == "gradlab" and name not in HARNESS_MAY_IMPORT):
                raise GradlabError(f"{where}: {path} imports {name}, which does not exist in the sandbox: a harness "
                                   "imports torch, the standard library and gradlab.kit.harness only")

