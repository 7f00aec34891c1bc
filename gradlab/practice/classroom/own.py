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

Before any student's file runs, self_test() makes each exercise's inputs and runs its reference and known mistakes on
them, bounded in time, for seed 0 when the course is read and again for the seed a course's check or grade draws
(ready()): a mistake in the teacher's files is one line naming the file, the line and what to fix, said as the
course's fault (exit 2, nothing graded), never a failed check counted against a student.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import importlib
import importlib.util
import re
import sys
import threading
import traceback
import warnings
from pathlib import Path

from gradlab.errors import GradlabError
from gradlab.kit.exercise import RESERVED, Checks, Exercise, values
from gradlab.practice import all_exercises
from gradlab.practice.judging.check import references

NAME = re.compile(r"^[a-z][a-z0-9_]*$")
PARTS = ("__init__.py", "harness.py", "checks.py")
HARNESS_MAY_IMPORT = ("torch", "gradlab.kit.harness")  # and the standard library
SELF_TEST_S = 60.0  # the teacher's inputs, reference and known mistakes on one seed take this long at most
# a dataclass of the vocabulary called with positional fields (they are keyword-only)
POSITIONAL = re.compile(r"^(\w+)\.__init__\(\) takes 1 positional argument")


def package_of(lesson: str) -> str:
    """The module name a teacher's folder is imported as, here and (its harness alone) in the sandbox."""
    return f"gradlab_own_{lesson}"


def load(folder: Path, where: str) -> list[str]:
    """Import the teacher's exercises in FOLDER and add them to gradlab's (all_exercises()); their names, each
    self-tested on seed 0. WHERE names the course file, for errors (one line each: a missing file, a harness that
    imports more than it may, a reference that raises, …)."""
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
    declared = getattr(module, "EXERCISES", [])
    for exercise in declared if isinstance(declared, list | tuple) else []:
        if not isinstance(exercise, Exercise):
            raise _broken(where, f"the folder {lesson}", f"{folder / '__init__.py'}'s EXERCISES", "",
                          f"it holds {type(exercise).__name__} {exercise!r:.60}", "list Exercise(...) objects only")
        exercise = dataclasses.replace(exercise, lesson=lesson, package=package, folder=str(folder.resolve()))
        if exercise.name in all_exercises() and not all_exercises()[exercise.name].package:
            raise GradlabError(f"{where}: {exercise.name} is one of gradlab's exercises; name the folder otherwise")
        all_exercises()[exercise.name] = exercise
        names.append(exercise.name)
    if not names:
        raise GradlabError(f"{where}: {folder / '__init__.py'} declares no EXERCISES = [Exercise(...), ...]")
    for name in names:
        self_test(name, 0, where)
    return names


def ready(names: list[str], seed: int, where: str) -> list[str]:
    """The course's own exercises among NAMES self-tested on SEED (the seed a course's check or grade drew; seed 0
    was tested when the course was read), before any student's file runs; notes for the teacher: an exercise whose
    inputs differ in label or kind between seed 0 and SEED (an edge case drawn from the seed is not there every
    time)."""
    notes = []
    for name in dict.fromkeys(names):
        if not all_exercises()[name].package:
            continue
        if seed != 0:
            self_test(name, seed, where)
        notes += _seed_note(name, seed)
    return notes


def _seed_note(name: str, seed: int) -> list[str]:
    """A note when NAME's inputs on SEED are not seed 0's by label and kind (both were made by the self-tests)."""
    if seed == 0:
        return []
    cases = {s: collections.Counter((c["label"], c["kind"]) for c in references(all_exercises()[name], s).cases)
             for s in (0, seed)}
    if cases[0] == cases[seed]:
        return []
    gone = ", ".join(f"{label!r} ({kind})" for label, kind in sorted(cases[0] - cases[seed]))
    new = ", ".join(f"{label!r} ({kind})" for label, kind in sorted(cases[seed] - cases[0]))
    return [f"{name}'s inputs differ between seed 0 and seed {seed} (only on seed 0: {gone or 'none'}; only on seed "
            f"{seed}: {new or 'none'}): an edge case drawn from the seed is not checked on every seed; give the edge "
            "cases that must always be checked fixed values in harness.py (the docs' page 'A teacher's own exercise: "
            "the API', 'Edge cases on every seed')"]


def self_test(name: str, seed: int, where: str) -> None:
    """NAME's files tested on SEED in gradlab's process, at most SELF_TEST_S seconds: checks.py's CHECKS entry and
    harness.py's HARNESSES entry, the inputs, the reference's outputs and each known mistake's, as judging needs
    them. Anything wrong is one GradlabError naming the teacher's file and line (the references made are kept:
    the students' checks reuse them)."""
    exercise = all_exercises()[name]
    folder = Path(exercise.folder)
    doing = {"what": f"importing {folder / 'checks.py'}"}
    done: dict = {}

    def work() -> None:
        try:
            _test(exercise, seed, doing)
            done["ok"] = True
        except BaseException as e:
            done["error"] = e

    worker = threading.Thread(target=work, daemon=True, name=f"gradlab self-test of {name}")
    worker.start()
    worker.join(SELF_TEST_S)
    if worker.is_alive():
        frame = sys._current_frames().get(worker.ident)
        stack = [f for f in traceback.extract_stack(frame) if _inside(f.filename, folder)] if frame else []
        at = f" (it was at {stack[-1].filename}, line {stack[-1].lineno})" if stack else ""
        raise _broken(where, name, doing["what"], at, f"it did not finish in {SELF_TEST_S:g} s",
                      "an endless loop, or far more work than a check needs: make it finish in seconds")
    error = done.get("error")
    if isinstance(error, GradlabError):
        raise GradlabError(f"{where}: {error}") from None
    if error is not None:
        raise _broken(where, name, doing["what"], _at(error, folder), _why(error), _fix(error, doing["what"])) from None


def _test(exercise: Exercise, seed: int, doing: dict) -> None:
    """The work of self_test; DOING["what"] says what runs (for an error or a hang). A GradlabError says a problem
    that no exception shows (an entry missing, a wrong kind of value) in full, without the course file."""
    checks = _entries(exercise, doing)
    cases, refs = _reference(exercise, checks, seed, doing)
    _mistakes(exercise, checks, cases, refs, seed, doing)
    doing["what"] = f"the reference on the inputs of seed {seed}"
    references(exercise, seed)  # kept: the students' checks reuse it


def _entries(exercise: Exercise, doing: dict) -> Checks:
    """The exercise's Checks, once checks.py's CHECKS entry and harness.py's HARNESSES entry are what judging needs."""
    from gradlab.practice import checks_of

    folder, function, name = Path(exercise.folder), exercise.function, exercise.name
    module = importlib.import_module(f"{exercise.package}.checks")
    table = getattr(module, "CHECKS", None)
    if table is None:
        raise _broken_entry(name, folder / "checks.py", "CHECKS", function, "checks.py defines no CHECKS",
                            f"add CHECKS = {{\"{function}\": Checks(...)}}")
    if not isinstance(table, dict) or function not in table:
        has = _has(table)
        raise _broken_entry(name, folder / "checks.py", "CHECKS", function,
                            f"no CHECKS entry for {function!r} ({has})", f"add \"{function}\": Checks(...)")
    checks = checks_of(exercise)
    if not isinstance(checks, Checks):
        raise _broken_entry(name, folder / "checks.py", "CHECKS", function, f"CHECKS[{function!r}] is "
                            f"{type(checks).__name__}, not a Checks", "make it Checks(harness=..., reference=...)")
    doing["what"] = f"importing {folder / 'harness.py'}"
    harnesses = getattr(importlib.import_module(f"{exercise.package}.harness"), "HARNESSES", None)
    if not isinstance(harnesses, dict) or function not in harnesses:
        has = _has(harnesses)
        raise _broken_entry(name, folder / "harness.py", "HARNESSES", function, f"no HARNESSES entry for "
                            f"{function!r} ({has}), which is what calls a student's function in the sandbox",
                            f"add \"{function}\": Harness(cases=..., call=...)")
    if harnesses[function] != checks.harness:
        raise _broken_entry(name, folder / "checks.py", "CHECKS", function, f"Checks(harness=...) of {function!r} is "
                            f"not harness.py's HARNESSES[{function!r}], which is what calls a student's function in "
                            "the sandbox", f"give harness=HARNESSES[{function!r}]")
    if checks.reference is None and checks.expected is None:
        raise _broken_entry(name, folder / "checks.py", "CHECKS", function, f"Checks(reference=None) of "
                            f"{function!r} gives no right answer", "give reference= a function with the student's "
                            "signature")
    return checks


def _reference(exercise: Exercise, checks: Checks, seed: int, doing: dict) -> tuple[list[dict], list[dict]]:
    """SEED's inputs and the reference's outputs on each, checked as judging needs them, and checks.py's extra on
    them measuring one value per rule."""
    doing["what"] = f"making the inputs (harness.py's cases, seed {seed})"
    cases = checks.cases(seed)
    _check_cases(exercise, cases, seed)
    refs = []
    for case in cases:
        doing["what"] = f"the reference on input {case['label']!r} (seed {seed})"
        refs.append(checks.run(None, case))
        # expected= gives the reference's values in closed form, without the rules the harness measures of a function
        _check_outputs(exercise, refs[-1], f"the reference's outputs on input {case['label']!r} (seed {seed})",
                       rules=checks.expected is None)
    doing["what"] = f"checks.py's extra (the rules {exercise.rules!r:.60}) on the reference's outputs"
    measured = list(checks.extra(refs, cases))
    if len(measured) != len(exercise.rules):
        raise _broken_entry(exercise.name, Path(exercise.folder) / "checks.py", "CHECKS", exercise.function,
                            f"Checks(extra=...) measured {len(measured)} values where the Exercise has "
                            f"{len(exercise.rules)} rules", "return one value per rule")
    return cases, refs


def _mistakes(exercise: Exercise, checks: Checks, cases: list[dict], refs: list[dict], seed: int,
              doing: dict) -> None:
    """Each known mistake run on every input, and its diagnosis a sentence."""
    for mistake in checks.mistakes:
        for case in cases:
            doing["what"] = f"the known mistake {mistake.name!r} on input {case['label']!r} (seed {seed})"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theirs = checks.run(mistake, case)
        doing["what"] = f"the known mistake {mistake.name!r}'s diagnosis"
        told = mistake.tell(values(theirs), values(refs[-1]))
        if not isinstance(told, str):
            raise _broken_entry(exercise.name, Path(exercise.folder) / "checks.py", "CHECKS", exercise.function,
                                f"the diagnosis of the known mistake {mistake.name!r} gave {type(told).__name__}",
                                "give a sentence, or a function that returns one")


def _has(table) -> str:
    return f"it has {', '.join(map(repr, table))}" if isinstance(table, dict) and table else "it has none"


def _check_cases(exercise: Exercise, cases, seed: int) -> None:
    """What judging needs of the inputs: a list of dicts, each with a "label" and a "kind" that the Exercise's claims
    name, every claim's kind among them."""
    where = Path(exercise.folder) / "harness.py"
    if not isinstance(cases, list) or not cases or not all(isinstance(c, dict) for c in cases):
        raise _broken_entry(exercise.name, where, "HARNESSES", exercise.function, f"cases({seed}) returned "
                            f"{type(cases).__name__} {cases!r:.40}", "return a list of dicts, one per input")
    for c in cases:
        if not isinstance(c.get("label"), str) or c.get("kind") not in exercise.claims:
            raise _broken_entry(exercise.name, where, "HARNESSES", exercise.function, f"an input of cases({seed}) "
                                f"has label {c.get('label')!r} and kind {c.get('kind')!r}", "give each input a "
                                f"\"label\" (a string) and a \"kind\" that Exercise(claims=...) names "
                                f"({', '.join(map(repr, exercise.claims))})")
    unused = [k for k in exercise.claims if not any(c["kind"] == k for c in cases)]
    if unused:
        raise _broken_entry(exercise.name, where, "HARNESSES", exercise.function, f"no input of cases({seed}) is of "
                            f"kind {unused[0]!r}, which Exercise(claims=...) claims about", "give it an input, or "
                            "drop the claim")


def _check_outputs(exercise: Exercise, out, what: str, rules: bool = True) -> None:
    """OUT as judging reads it: {name: tensor or a list of tensors}, CHANGED and GRAPH where the Exercise's keeps
    and no_autograd measure them."""
    import torch

    where = Path(exercise.folder) / "harness.py"

    def tensors(v) -> bool:
        return isinstance(v, torch.Tensor) or (isinstance(v, list | tuple) and all(isinstance(t, torch.Tensor)
                                                                                    for t in v))
    bad = (f"a {type(out).__name__}, not a dict" if not isinstance(out, dict) else
           next((f"a dict whose {k!r} is a {type(v).__name__}" for k, v in out.items()
                 if not (isinstance(k, str) and tensors(v))), None))
    if bad:
        raise _broken_entry(exercise.name, where, "HARNESSES", exercise.function, f"{what} are {bad}",
                            "make Harness(call=...) return {name: tensor or [tensors]}")
    if not values(out):
        raise _broken_entry(exercise.name, where, "HARNESSES", exercise.function, f"{what} hold only rules "
                            f"({', '.join(out)}), nothing to compare", "return the function's outputs too")
    needed = [k for k, used in zip(RESERVED, (exercise.keeps, exercise.no_autograd), strict=True)
              if rules and used and k not in out]
    if needed:
        raise _broken_entry(exercise.name, where, "HARNESSES", exercise.function, f"{what} have no {needed[0]!r}, "
                            "which Exercise(keeps=..., no_autograd=...) measures", "report it from Harness(call=...) "
                            "(CHANGED: changed(...); GRAPH: Graph().count()), or drop keeps/no_autograd")


def _broken(where: str, name: str, doing: str, at: str, why: str, fix: str) -> GradlabError:
    """The one line that says the course's own exercise is broken: what ran, where, why, and what to fix."""
    head = f"{where}: " if where else ""
    return GradlabError(f"{head}the course's own exercise {name} is broken (the teacher's files, not a student's): "
                        f"{doing} failed{at}: {why}; {fix} (no student's file was graded)")


def _broken_entry(name: str, path: Path, variable: str, function: str, why: str, fix: str) -> GradlabError:
    """_broken for a value that is wrong rather than an exception: the line of VARIABLE's assignment in PATH."""
    line = _line_of(path, variable)
    return _broken("", name, f"reading {variable}[{function!r}]", f" at {path}" + (f", line {line}" if line else ""),
                   why, fix)


def _line_of(path: Path, variable: str) -> int | None:
    """The line where PATH assigns VARIABLE at its top level, None when it does not."""
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == variable for t in targets):
            return node.lineno
    return None


def _inside(filename: str, folder: Path) -> bool:
    return filename.startswith(str(folder.resolve()) + "/")


def _at(e: BaseException, folder: Path) -> str:
    """Where in the teacher's files E was raised: " at FILE, line N" (a syntax error's own place, else the deepest
    frame in FOLDER), or "" when no frame is theirs."""
    if isinstance(e, SyntaxError) and e.filename and e.lineno:
        return f" at {e.filename}, line {e.lineno}"
    frames = [f for f in traceback.extract_tb(e.__traceback__) if _inside(f.filename, folder)]
    return f" at {frames[-1].filename}, line {frames[-1].lineno}" if frames else ""


def _why(e: BaseException) -> str:
    text = e.msg if isinstance(e, SyntaxError) else str(e)
    return " ".join(f"{type(e).__name__}: {text}".split())[:300]


def _fix(e: BaseException, doing: str = "") -> str:
    """What to change for E (raised while DOING): the vocabulary's fields are keywords; a reference or a known
    mistake that returns what the harness cannot read (the harness's Returned) is to return what a right answer
    does; otherwise fix the line named."""
    found = POSITIONAL.match(str(e)) if isinstance(e, TypeError) else None
    if found:
        return (f"{found[1]}(...) takes keywords only: write each field by its name, e.g. Exercise(function=..., "
                "level=..., what=..., signature=..., doc=...)")
    if type(e).__name__ == "Returned" and doing.startswith(("the reference", "the known mistake")):
        return f"{doing.split(' on input')[0]} must return what a right answer returns (as harness.py's call reads it)"
    return "fix it there"


def _import(folder: Path, package: str, where: str):
    """FOLDER as the package PACKAGE (a mistake in the teacher's __init__.py is said in one line)."""
    try:
        if package not in sys.modules:
            spec = importlib.util.spec_from_file_location(package, folder / "__init__.py",
                                                          submodule_search_locations=[str(folder)])
            module = importlib.util.module_from_spec(spec)
            sys.modules[package] = module
            spec.loader.exec_module(module)
        return sys.modules[package]
    except Exception as e:
        for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
            del sys.modules[name]
        raise _broken(where, f"folder {folder.name}", f"importing {folder / '__init__.py'}", _at(e, folder), _why(e),
                      _fix(e)) from None


def _check_harness(path: Path, where: str) -> None:
    """The harness runs in the sandbox, where only torch, the standard library and gradlab.kit.harness exist."""
    try:
        tree = ast.parse(path.read_bytes(), str(path))
    except SyntaxError as e:
        raise _broken(where, f"folder {path.parent.name}", f"reading {path}", _at(e, path.parent), _why(e),
                      "fix it there") from None
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 ["." * node.level + (node.module or "")] if isinstance(node, ast.ImportFrom) else [])
        for name in names:
            if name.startswith(".") or (name.split(".")[0] == "gradlab" and name not in HARNESS_MAY_IMPORT):
                raise GradlabError(f"{where}: {path} imports {name}, which does not exist in the sandbox: a harness "
                                   "imports torch, the standard library and gradlab.kit.harness only")
