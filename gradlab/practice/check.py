"""`gradlab check FILE`: run a submission in the sandbox, compare it with the reference on every generated input, run
the lesson's claims on its outputs, and diagnose a wrong answer: a known mistake by name and its fix, else the first
input where it differs. The result is a Result like a lesson's: a table of checks, claims with ✓/✗, exit code."""

from __future__ import annotations

import functools
import math
import re
import textwrap
from pathlib import Path

from gradlab.errors import GradlabError, check
from gradlab.practice import EXERCISES
from gradlab.practice.exercise import Exercise
from gradlab.result import Claim, Result, Table

MARKER = re.compile(r"^# gradlab-exercise: (\S+)\s*$", re.M)
MATCHES = 1e-5  # a submission "is" a known mistake when its outputs agree with that mistake's this closely


def marker(source: bytes) -> str | None:
    """The exercise a file names on its `# gradlab-exercise: NAME` line, or None."""
    found = MARKER.search(source[:100_000].decode("utf-8", errors="replace"))
    return found.group(1) if found else None


def exercise_of(path: str, override: str | None) -> Exercise:
    """The exercise FILE says it is (its `# gradlab-exercise: NAME` line), or OVERRIDE (--exercise): a student's own
    check. A course's check never lets the file choose (gradlab.practice.commands)."""
    from gradlab.practice.sandbox import read_submission

    check(Path(path).is_file(), f"{path} is not a file; give the .py file that `gradlab exercise NAME` wrote")
    if override is None:
        try:
            override = marker(read_submission(path))
        except (OSError, ValueError) as e:
            raise GradlabError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None
        check(override is not None, f"{path} does not say which exercise it is (no '# gradlab-exercise: NAME' "
                                    f"line); add --exercise NAME (gradlab exercises lists them)")
    check(override in EXERCISES, f"unknown exercise {override!r}; gradlab exercises lists them")
    return EXERCISES[override]


def starter(exercise: Exercise) -> str:
    """The starter file: the signature, the math, the shapes, the TF-1 line, a body that raises NotImplementedError,
    and the command that checks it."""
    doc = "\n".join(("    " + line.strip()) if line.strip() else "" for line in exercise.doc.splitlines())
    if exercise.signature.startswith("class "):  # a torch.autograd.Function: its forward and its backward
        body = "".join(f'\n    @staticmethod\n    def {name}(ctx, {arg}):\n        raise NotImplementedError('
                       f'"write {exercise.function}.{name}")\n' for name, arg in (("forward", "x"), ("backward", "dy")))
    else:
        body = f'    raise NotImplementedError("write {exercise.function}")\n'
    head = textwrap.fill(f"gradlab exercise {exercise.name} (level {exercise.level}): {exercise.what}.", 110)
    rule = "" if not exercise.forbidden else textwrap.fill(
        f"Write it yourself: this exercise is to write what {', '.join(exercise.forbidden)} "
        f"{'does' if len(exercise.forbidden) == 1 else 'do'} for you, so calling "
        f"{'it' if len(exercise.forbidden) == 1 else 'one of them'} fails a check of its own.", 110) + "\n\n"
    return (f'"""{head}\n\n{rule}'
            f"Write the body of {exercise.function} below, then check it:\n\n"
            f"    gradlab check {exercise.function}.py\n"
            f'"""\n\n# gradlab-exercise: {exercise.name}\n'
            "import torch\nimport torch.nn.functional as F\n\n\n"
            f'{exercise.signature}\n    """{doc.lstrip()}\n    """\n{body}')


HEADER = "import math\n\nimport torch\nimport torch.nn.functional as F\n\n"  # above a model answer, as a file


def pickled(fn) -> tuple[bytes, dict[str, str]]:
    """FN (a function, a lambda or an autograd.Function class) by value, with what it uses from other cells: cloudpickle
    pickles a notebook's functions and classes with the globals they use (helpers from other cells, by value too)
    and modules by name, as Ray, Dask and joblib ship functions. A function from a module the sandbox cannot import
    (a .py file beside the notebook) goes by value as well. Also the text of the cells its code comes from, for its
    traceback. Unpickled in the sandbox only, never here."""
    import inspect
    import linecache
    import sys

    import cloudpickle

    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    by_value = module is not None and module.__name__ != "__main__" and _own_module(module)
    if by_value:
        cloudpickle.register_pickle_by_value(module)
    try:
        data = cloudpickle.dumps(fn)
    except Exception as e:
        raise GradlabError(f"gradlab.check cannot send {getattr(fn, '__name__', fn)!r} to the sandbox: {e}") from None
    finally:
        if by_value:
            cloudpickle.unregister_pickle_by_value(module)
    lines = {}
    codes = [getattr(getattr(f, "__func__", f), "__code__", None) for f in ([fn] if not isinstance(fn, type) else
                                                                          vars(fn).values())]
    for code in [c for c in codes if c is not None]:
        for name in {code.co_filename, *(getattr(g, "__code__", None) and g.__code__.co_filename for g in
                                         (inspect.getclosurevars(fn).globals.values() if inspect.isfunction(fn)
                                          else ()) if inspect.isfunction(g))}:
            if name and name not in lines and not Path(name).is_file() and linecache.getlines(name):
                lines[name] = "".join(linecache.getlines(name))[:200_000]
    return data, lines


def _own_module(module) -> bool:
    """Whether MODULE is the student's (a file outside Python's installation and its site-packages)."""
    import sys
    import sysconfig

    path = getattr(module, "__file__", None)
    if not path:
        return False
    path = str(Path(path).resolve())
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values()}
    return not any(path.startswith(str(Path(r).resolve()) + "/") for r in roots if r)


def check_function(fn, name: str) -> Result:
    """gradlab.check(FN, NAME): FN, defined in a notebook cell (or a module), checked as `gradlab check` checks a
    file: shipped by value into the sandbox with what it uses from other cells."""
    check(isinstance(name, str) and name in EXERCISES, f"unknown exercise {name!r}; gradlab.exercises() lists them")
    check(callable(fn), f"gradlab.check: {fn!r} is not a function")
    from gradlab.report import html  # noqa: F401 — registers how Jupyter draws the Result

    data, lines = pickled(fn)
    shown = f"{getattr(fn, '__qualname__', None) or EXERCISES[name].function} (a notebook cell)"
    return run_check(shown, EXERCISES[name], source=data, kind="pickle", lines=lines)


def stopped_result(exercise: Exercise, path: str, error: str, kind: str = "died", seed: int = 0) -> Result:
    """The Result of a submission that could not run at all (unreadable, the wrong exercise): every check there, not
    reached, with ERROR (one line) as why."""
    cases, refs = references(exercise, seed)
    result = judge(exercise, cases, refs, {"ok": False, "kind": kind, "error": error, "trace": ""}, seed)
    result.config = {"file": path}
    return result


def references(exercise: Exercise, seed: int) -> tuple[list[dict], list[dict]]:
    """EXERCISE's inputs for SEED and the reference's outputs on them, computed here, never in the submission's
    process; once per exercise and seed (a class's folder shares them)."""
    from gradlab import threads

    threads.apply(1)  # as the submission computes (OMP_NUM_THREADS=1): a known mistake then matches it to the bit
    return _references(exercise.name, seed)


@functools.lru_cache(maxsize=8)
def _references(name: str, seed: int) -> tuple[list[dict], list[dict]]:
    from gradlab.practice import checks_of

    checks = checks_of(EXERCISES[name])
    cases = checks.cases(seed)
    return cases, [checks.call(checks.reference, c) for c in cases]


JUDGE_S = 60.0  # gradlab's own judging of one submission (references, diagnosis) may take this long at most


def run_check(path: str, exercise: Exercise, seed: int = 0, *, source: bytes | None = None, kind: str = "source",
              lines: dict[str, str] | None = None, follow: bool = True) -> Result:
    """Check the submission at PATH (SOURCE: its bytes, read safely by the caller; else read here, through a link
    only when FOLLOW) against EXERCISE: its process runs in the sandbox while the references are computed here."""
    from gradlab.practice import sandbox

    if source is None:
        try:
            source = sandbox.read_submission(path, follow=follow)
        except (OSError, ValueError) as e:
            return stopped_result(exercise, path, f"cannot read {path}: {getattr(e, 'strerror', None) or e}", seed=seed)
    box = sandbox.Sandbox(exercise, seed, source=source, shown=path, kind=kind, lines=lines)  # it imports torch
    cases, refs = references(exercise, seed)  # while we work
    got = box.finish(expected=refs)
    result = _judged(exercise, cases, refs, got, seed, path)
    result.config = {"file": path}
    result.metrics["sandbox"] = got["sandbox"]
    if got.get("printed") and "printed" not in result.metrics:
        result.metrics["printed"] = got["printed"][-sandbox.SHOWN:]
        result.metrics["printed_bytes"] = got["printed_bytes"]
    return result


def _judged(exercise: Exercise, cases: list[dict], refs: list[dict], got: dict, seed: int, path: str) -> Result:
    """judge(), with a time limit and no way to crash gradlab: a failure of the judging is that submission's failed
    check, said in one line, and the other submissions of a folder go on."""
    import threading

    from gradlab.practice.isolate import one_line

    done: dict = {}

    def work() -> None:
        try:
            done["result"] = judge(exercise, cases, refs, got, seed)
        except BaseException as e:
            done["error"] = e

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(JUDGE_S)
    if "result" in done:
        return done["result"]
    if worker.is_alive():
        why = f"gradlab's judging of your outputs took longer than {JUDGE_S:g} s and was stopped"
    else:
        error = done["error"]
        why = f"gradlab could not judge your outputs ({one_line(f'{type(error).__name__}: {error}', 200)})"
    return stopped_result(exercise, path, why, "output", seed)


def judge(exercise: Exercise, cases: list[dict], refs: list[dict], got: dict, seed: int = 0) -> Result:
    """The Result of a submission whose sandbox returned GOT, against the references REFS on CASES."""
    from gradlab.practice import checks_of, sandbox
    from gradlab.practice.exercise import relative

    checks = checks_of(exercise)
    notes = []
    if got.get("printed_bytes", 0) > sandbox.SHOWN:
        notes.append(f"your code printed {got['printed_bytes']:,} bytes; the last 200 characters: "
                     f"…{got['printed'][-200:]!r}")
    result = Result(lesson="check", title=f"{exercise.name}: {exercise.what}", config={}, seed=seed,
                    metrics={"exercise": exercise.name}, claims=[], notes=notes)
    if not got["ok"]:  # every check is there, not reached (NaN fails): a course's points add up the same way
        result.stopped = got["error"]
        result.metrics["trace"] = got.get("trace", "")
        result.claims = [Claim(f"{exercise.name}:{kind}", f"{text} — not reached", math.nan, bound)
                         for kind, (text, bound) in checks.claims.items()]
        result.claims += [Claim(f"{exercise.name}:extra{i}", f"{text} — not reached", math.nan, bound, op)
                          for i, (text, _, bound, op) in enumerate(checks.extra(refs, cases))]
        own_code(exercise, got, result)
        return result
    outputs = got["outputs"]
    diffs = [relative(o, r) for o, r in zip(outputs, refs, strict=True)]
    rows = [[c["label"], c["kind"], d, "✓" if d <= checks.claims[c["kind"]][1] else "✗"]
            for c, d in zip(cases, diffs, strict=True)]
    result.tables.append(Table(f"your {exercise.function}() against the reference, input by input",
                               ["input", "checks", "max relative |Δ|", ""], rows, [None, None, ".3g", None]))
    for kind, (text, bound) in checks.claims.items():
        worst = max(d for c, d in zip(cases, diffs, strict=True) if c["kind"] == kind)
        result.claims.append(Claim(f"{exercise.name}:{kind}", text, worst, bound))
    result.claims += [Claim(f"{exercise.name}:extra{i}", text, value, bound, op)
                      for i, (text, value, bound, op) in enumerate(checks.extra(outputs, cases))]
    if not all(c.passed for c in result.claims):
        diagnosis = diagnose(checks, cases, outputs, refs, diffs)
        result.metrics["diagnosis"] = diagnosis  # the report prints it under the claims
    own_code(exercise, got, result)
    return result


def own_code(exercise: Exercise, got: dict, result: Result) -> None:
    """The check of an exercise that asks students to write what a library already does (Exercise.forbidden): a call
    to one of those, noted in the sandbox, fails it, and says which ("uses torch.nn.utils.clip_grad_norm_, which
    this exercise asks you to write"). Not reached when the submission stopped."""
    if not exercise.forbidden:
        return
    used = [u for u in got.get("used", []) if isinstance(u, str)]
    one = len(exercise.forbidden) == 1
    text = (f"your code {'does not use' if one else 'uses none of'} {', '.join(exercise.forbidden)} (the exercise "
            f"is to write what {'it does' if one else 'they do'})")
    value = math.nan if not got.get("ok") else float(len(used))
    result.claims.append(Claim(f"{exercise.name}:own", text + ("" if got.get("ok") else " — not reached"), value, 0))
    if used:
        why = f"uses {', '.join(used)}, which this exercise asks you to write"
        result.metrics["own_code"] = why
        if "diagnosis" in result.metrics:
            result.notes.append(why)
        else:
            result.metrics["diagnosis"] = why


def diagnose(checks, cases: list[dict], outputs: list[dict], refs: list[dict], diffs: list[float]) -> str:
    """A known mistake whose outputs the submission's match on every input, by name with its fix; else where the
    submission first differs from the reference."""
    from gradlab.practice.exercise import same, tensors

    for mistake in checks.mistakes:
        theirs = [checks.call(mistake.fn, c) for c in cases]
        if all(same(o, m, MATCHES) for o, m in zip(outputs, theirs, strict=True)):
            first = next(i for i, d in enumerate(diffs) if d > MATCHES) if any(d > MATCHES for d in diffs) else 0
            return f"{mistake.name}: {mistake.diagnosis(outputs[first], refs[first])}"
    i = max(range(len(diffs)), key=lambda k: diffs[k])
    for a, b in zip(tensors(outputs[i]), tensors(refs[i]), strict=False):
        if a.shape != b.shape:
            return (f"on the input '{cases[i]['label']}' your output has shape {tuple(a.shape)} where "
                    f"{tuple(b.shape)} is expected")
        bad = ((a.double() - b.double()).abs() > MATCHES * max(1.0, float(b.abs().max()))) | ~a.isfinite()
        if bad.any():
            at = tuple(int(v) for v in bad.nonzero()[0])
            return (f"no known mistake matches; the first difference is on the input '{cases[i]['label']}', at "
                    f"index {at}: yours {float(a[at]):.9g}, expected {float(b[at]):.9g}")
    return f"your output differs from the expected one on the input '{cases[i]['label']}'"
