"""A submission: the student's code, read once, with the exercise it is graded as.

A file is read once, where gradlab meets it (`gradlab check FILE` or FOLDER here, `gradlab grade` in
gradlab.practice.classroom.gradebook), by sandbox.read_submission: a regular file only, at most 1 MB, through a link
only for
a student's own check. Its `# gradlab-exercise: NAME` line is parsed once, here; a notebook's function is pickled
once (gradlab.practice.classroom.notebook). Everything after that (the pre-flight, the sandbox, the judging) reads the
Submission, never the file again.
"""

from __future__ import annotations

import ast
import difflib
import os
import re
from dataclasses import dataclass, field

from gradlab.errors import GradlabError
from gradlab.kit.exercise import Exercise
from gradlab.kit.text import alike, one_line, sanitize
from gradlab.practice import all_exercises
from gradlab.practice.sandbox.files import read_submission
from gradlab.practice.sandbox.parsing import parse

MARKER = re.compile(r"^# gradlab-exercise: (\S+)\s*$", re.M)


@dataclass(frozen=True, kw_only=True)
class Submission:
    """One piece of student code to grade as EXERCISE.

    SHOWN is the name its student or teacher knows it by (the file's path, sanitized; student/file in a class; the
    function's name for a notebook cell). SOURCE is what runs in the sandbox: the file's bytes (KIND "source") or
    the function pickled by cloudpickle (KIND "pickle", with LINES, the text of its notebook cells, and CODE_FILES,
    the cell of each code object, for its traceback). STOP says, in one line, why it cannot run at all (missing from
    a student's folder, unreadable, another exercise's file); SOURCE is then None when nothing was read."""

    shown: str
    exercise: Exercise
    source: bytes | None = None
    kind: str = "source"
    lines: dict[str, str] = field(default_factory=dict, repr=False)
    code_files: list = field(default_factory=list, repr=False)
    stop: str | None = None


def marker(source: bytes) -> str | None:
    """The exercise a file names on its `# gradlab-exercise: NAME` line, or None."""
    found = MARKER.search(source[:100_000].decode("utf-8", errors="replace"))
    return found.group(1) if found else None


def read(path: str, *, follow: bool) -> bytes:
    """The bytes of the one file a command was given; an unreadable one is the command's error, in one line."""
    try:
        return read_submission(path, follow=follow)
    except (OSError, ValueError) as e:
        raise GradlabError(f"cannot read {sanitize(path)}: {_why(e)}") from None


def of_file(path: str, *, exercise_name: str | None, files_of: dict[str, str] | None,
            course_check: bool) -> Submission:
    """The one file at PATH, read once. A student's own check follows a link and may take the exercise from the
    file; a course's check (COURSE_CHECK) reads no link, and its exercise is the teacher's: EXERCISE_NAME, or the
    line of FILES_OF (the course file's {file: exercise}) for the file's name."""
    source = read(path, follow=not course_check)
    base = os.path.basename(path)
    if files_of is not None and base not in files_of:
        raise GradlabError(f"{path}: the course file names no exercise for {base}; it lists "
                           f"{', '.join(sorted(files_of))}")
    name = exercise_name or (files_of[base] if files_of else None)
    if not course_check:
        return own(path, source, name)
    return graded_as(all_exercises()[name], sanitize(path), source)


def of_folder(path: str, *, exercise_name: str | None, files_of: dict[str, str] | None) -> list[Submission]:
    """The submissions of the folder at PATH, read without following links: the course file's files (FILES_OF; one
    missing cannot run), or every .py file in it as EXERCISE_NAME (two whose names look alike are neither graded)."""
    try:
        names = sorted(os.listdir(path))
    except OSError as e:
        raise GradlabError(f"cannot list {path}: {e.strerror}") from None
    if files_of is not None:
        return [of_course(os.path.join(path, n), all_exercises()[e], shown=n) if n in names else
                Submission(shown=n, exercise=all_exercises()[e], stop=f"{n} is missing from this submission")
                for n, e in sorted(files_of.items())]
    names = [n for n in names if n.endswith(".py")]
    if not names:
        raise GradlabError(f"{path} has no .py files to check")
    twins = alike(names)  # two files no one can tell apart in a table of grades: neither is graded
    exercise, todo = all_exercises()[exercise_name], []
    for n in names:
        others = [sanitize(m) for m in twins.get(n, [])]
        todo.append(Submission(shown=sanitize(n), exercise=exercise,
                               stop=f"its name looks like {' and '.join(others)}: rename one of them") if others
                    else of_course(os.path.join(path, n), exercise, shown=sanitize(n)))
    return todo


def own(path: str, source: bytes, exercise_name: str | None) -> Submission:
    """A student's own check of the file at PATH (SOURCE, its bytes): the exercise is EXERCISE_NAME (--exercise),
    else the one the file names on its `# gradlab-exercise:` line."""
    if exercise_name is None:
        exercise_name = marker(source)
        if exercise_name is None:
            raise GradlabError(f"{path} does not say which exercise it is (no '# gradlab-exercise: NAME' line); add "
                               "--exercise NAME (gradlab exercises lists them)")
    if exercise_name not in all_exercises():
        raise GradlabError(f"unknown exercise {exercise_name!r}; gradlab exercises lists them")
    return Submission(shown=sanitize(path), exercise=all_exercises()[exercise_name], source=source)


def graded_as(exercise: Exercise, shown: str, source: bytes) -> Submission:
    """SOURCE graded for a course as EXERCISE, the teacher's choice: a file whose `# gradlab-exercise:` line names
    another exercise fails (it is not switched)."""
    named = marker(source)
    stop = None if named is None or named == exercise.name else (
        f"this file says it is {one_line(named, 80)} (its '# gradlab-exercise:' line) but is graded as "
        f"{exercise.name}: fix that line, or hand in the file of this exercise")
    return Submission(shown=shown, exercise=exercise, source=source, stop=stop)


def of_course(path: str, exercise: Exercise, *, shown: str, called: str | None = None) -> Submission:
    """The file at PATH in a class's folder, graded as EXERCISE: read without following a link (a link could name a
    file only root may read); an unreadable file cannot run, said with its name as CALLED (default: SHOWN)."""
    try:
        source = read_submission(path, follow=False)
    except (OSError, ValueError) as e:
        return Submission(shown=shown, exercise=exercise, stop=f"cannot read {called or shown}: {_why(e)}")
    return graded_as(exercise, shown, source)


def _why(error: OSError | ValueError) -> str:
    return getattr(error, "strerror", None) or str(error)


# ------------------------------------------------------------------------------------------------ the pre-flight

DYNAMIC = ("exec", "eval", "globals", "setattr", "__import__", "vars", "locals")  # calls that bind names at run time


def preflight(source: bytes, path: str, exercise: Exercise) -> str | None:
    """What stops SOURCE (the bytes of the file at PATH) before anything of it runs, found without starting a process
    or importing torch: a syntax error, or no top-level definition of the function (or class) the exercise asks
    for. None when neither. The file is only parsed (ast), never run here."""
    try:
        tree = parse(source, path)
    except SyntaxError as e:
        return f"syntax error at line {e.lineno}: {e.msg}"
    except (ValueError, RecursionError, MemoryError):
        return None  # odd bytes or a parser limit: the sandbox reports it as it runs the file
    names = top_level_names(tree.body)
    if exercise.function in names or _binds_at_run_time(tree):
        return None
    what = "class" if exercise.signature.startswith("class ") else "function"
    close = difflib.get_close_matches(exercise.function, sorted(names), 1, 0.6)
    return (f"your file defines no {what} {exercise.function}{'()' if what == 'function' else ''} at its top level"
            + (f" (it has {close[0]}: rename it {exercise.function})" if close else ""))


def _binds_at_run_time(tree: ast.Module) -> bool:
    """Whether the file may bind a name that only running it can tell: exec, setattr and the like, import *."""
    return any((isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DYNAMIC)
               or (isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names))
               for node in ast.walk(tree))


def top_level_names(body: list[ast.stmt]) -> set[str]:
    """The names a module's top level binds: definitions, assignments and imports, inside if/try/with/for too, not
    inside functions or classes."""
    names = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            continue
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.For | ast.With):
            targets = node.targets if isinstance(node, ast.Assign) else [
                getattr(node, "target", None), *[i.optional_vars for i in getattr(node, "items", [])]]
            names.update(n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        for part in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, part, None)
            if isinstance(inner, list):
                names |= top_level_names(inner)
    return names
