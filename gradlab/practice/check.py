"""`gradlab check FILE`: parse the file first (a syntax error or a missing function is reported at once, before any
process starts), run the submission in the sandbox, compare it with the reference on every generated input, run the
lesson's claims on its outputs, and diagnose a wrong answer: a known mistake by name and its fix, else what the
experiments measure (gradlab/practice/diagnosis.py). The result is a Result like a lesson's: a table of checks,
claims with ✓/✗, what the submission printed and warned, exit code."""

from __future__ import annotations

import functools
import math
import re
import textwrap
from pathlib import Path

from gradlab.errors import GradlabError, check
from gradlab.kit.exercise import Exercise
from gradlab.kit.result import Claim, Result, Table
from gradlab.practice import EXERCISES

MARKER = re.compile(r"^# gradlab-exercise: (\S+)\s*$", re.M)


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
                       f'"write {exercise.function}.{name}")\n'
                       for name, arg in (("forward", exercise.forward), ("backward", "dy")))
    else:
        body = f'    raise NotImplementedError("write {exercise.function}")\n'
    head = textwrap.fill(f"gradlab exercise {exercise.name} (level {exercise.level}): {exercise.what}.", 110)
    rule = "" if not exercise.forbidden else textwrap.fill(
        f"Write it yourself: this exercise is to write what {', '.join(exercise.forbidden)} "
        f"{'does' if len(exercise.forbidden) == 1 else 'do'} for you, so calling "
        f"{'it' if len(exercise.forbidden) == 1 else 'one of them'} fails a check of its own.", 110) + "\n\n"
    how = (f"then check it:\n\n    gradlab check {exercise.function}.py\n" if not exercise.package else
           f"then hand it in: your teacher checks it with the course's own checks,\n\n    gradlab check "
           f"{exercise.function}.py --course course.toml\n")
    return (f'"""{head}\n\n{rule}'
            f"Write the body of {exercise.function} below, {how}"
            f'"""\n\n# gradlab-exercise: {exercise.name}\n'
            "import torch\nimport torch.nn.functional as F\n\n\n"
            f'{exercise.signature}\n    """{doc.lstrip()}\n    """\n{body}')


HEADER = "import math\n\nimport torch\nimport torch.nn.functional as F\n\n"  # above a model answer, as a file


def pickled(fn) -> tuple[bytes, dict[str, str]]:
    """FN (a function, a lambda or an autograd.Function class) by value, with what it uses from other cells: cloudpickle
    pickles a notebook's functions and classes with the globals they use (helpers from other cells, by value too)
    and modules by name, as Ray, Dask and joblib ship functions. A function from a module the sandbox cannot import
    (a .py file beside the notebook) goes by value as well. Also, for its traceback, the text of the cells its code
    comes from and the cell of each code object (the child puts the file names back: cloudpickle 3.1.3 drops them).
    Unpickled in the sandbox only, never here."""
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
    lines, code_files = {}, []
    for code in _student_code(fn):
        name = code.co_filename
        code_files.append([*code_key(code), name])
        if name and name not in lines and not Path(name).is_file() and linecache.getlines(name):
            lines[name] = "".join(linecache.getlines(name))[:200_000]
    return data, lines, code_files


def code_key(code) -> list:
    """What identifies a code object on both sides of a pickle, whatever the pickler does to its file name (cloudpickle
    3.1.3 sets every co_filename to "<dynamic-code>"): its qualified name, first line and a digest of its bytecode."""
    import hashlib

    return [code.co_qualname, code.co_firstlineno, hashlib.sha256(code.co_code).hexdigest()[:16]]


def _student_code(fn) -> list:
    """The code objects of FN (or of an autograd.Function class's methods), of the functions of its module it uses
    (helpers from other cells, and theirs), and the code nested in them (inner functions, lambdas, comprehensions)."""
    import inspect
    import types

    roots = [fn] if not isinstance(fn, type) else list(vars(fn).values())
    todo = [f for f in (getattr(r, "__func__", r) for r in roots) if inspect.isfunction(f)]
    codes, seen = [], set()
    while todo:
        f = todo.pop()
        stack = [f.__code__]
        while stack:
            code = stack.pop()
            if id(code) in seen:
                continue
            seen.add(id(code))
            codes.append(code)
            stack += [c for c in code.co_consts if isinstance(c, types.CodeType)]
            todo += [g for g in (f.__globals__.get(n) for n in code.co_names)
                     if inspect.isfunction(g) and g.__module__ == f.__module__ and id(g.__code__) not in seen]
    return codes


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
    from gradlab.report.html import for_notebook  # the Result as Jupyter draws it

    data, lines, code_files = pickled(fn)
    shown = f"{getattr(fn, '__qualname__', None) or EXERCISES[name].function} (a notebook cell)"
    return for_notebook(run_check(shown, EXERCISES[name], source=data, kind="pickle", lines=lines,
                                  code_files=code_files))


def preflight(source: bytes, path: str, exercise: Exercise) -> str | None:
    """What stops SOURCE (the bytes of the file at PATH, read safely by the caller) before anything of it runs, found
    without starting a process or importing torch: a syntax error, or no top-level definition of the function (or
    class) the exercise asks for. None when neither. The file is only parsed (ast), never run here."""
    import ast
    import difflib

    from gradlab.practice.parsing import parse

    try:
        tree = parse(source, path)
    except SyntaxError as e:
        return f"syntax error at line {e.lineno}: {e.msg}"
    except (ValueError, RecursionError, MemoryError):
        return None  # odd bytes or a parser limit: the sandbox reports it as it runs the file
    names, dynamic = set(), False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "exec", "eval", "globals", "setattr", "__import__", "vars", "locals"):
            dynamic = True  # a name bound at run time: only running the file can tell
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            dynamic = True

    def bind(body) -> None:  # the names a module's top level binds (inside if/try/with/for too, not in functions)
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.For | ast.With):
                targets = node.targets if isinstance(node, ast.Assign) else [
                    getattr(node, "target", None), *[i.optional_vars for i in getattr(node, "items", [])]]
                for t in targets:
                    for n in ast.walk(t) if t is not None else []:
                        if isinstance(n, ast.Name):
                            names.add(n.id)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            for field in ("body", "orelse", "finalbody", "handlers"):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
                    inner = getattr(node, field, None)
                    if isinstance(inner, list):
                        bind(inner)

    bind(tree.body)
    if exercise.function in names or dynamic:
        return None
    what = "class" if exercise.signature.startswith("class ") else "function"
    close = difflib.get_close_matches(exercise.function, sorted(names), 1, 0.6)
    return (f"your file defines no {what} {exercise.function}{'()' if what == 'function' else ''} at its top level"
            + (f" (it has {close[0]}: rename it {exercise.function})" if close else ""))


def stopped_result(exercise: Exercise, path: str, error: str, kind: str = "died", seed: int = 0) -> Result:
    """The Result of a submission that could not run at all (unreadable, the wrong exercise): every check there, not
    reached, with ERROR (one line) as why. When the references themselves cannot be computed (a teacher's own
    exercise whose checks.py raises), the Result has no per-input checks: it must never raise."""
    try:
        cases, refs = references(exercise, seed)
    except Exception:
        cases, refs = [], []
    result = judge(exercise, cases, refs, {"ok": False, "kind": kind, "error": error, "trace": ""}, seed)
    result.config = {"file": path}
    return result


def references(exercise: Exercise, seed: int) -> tuple[list[dict], list[dict]]:
    """EXERCISE's inputs for SEED and the reference's outputs on them, computed here, never in the submission's
    process; once per exercise and seed (a class's folder shares them)."""
    from gradlab.kit import threads

    threads.apply(1)  # as the submission computes (OMP_NUM_THREADS=1): a known mistake then matches it to the bit
    return _references(exercise.name, getattr(exercise, "folder", None), seed)


@functools.lru_cache(maxsize=8)
def _references(name: str, folder: str | None, seed: int) -> tuple[list[dict], list[dict]]:
    """(FOLDER: a teacher's own exercise's, so that two courses' exercises of one name are two entries.)"""
    from gradlab.practice import checks_of

    checks = checks_of(EXERCISES[name])
    cases = checks.cases(seed)
    return cases, [checks.run(None, c) for c in cases]


JUDGE_S = 60.0  # gradlab's own judging of one submission (references, diagnosis) may take this long at most


def run_check(path: str, exercise: Exercise, seed: int = 0, *, source: bytes | None = None, kind: str = "source",
              lines: dict[str, str] | None = None, code_files: list | None = None, follow: bool = True) -> Result:
    """Check the submission at PATH (SOURCE: its bytes, read safely by the caller; else read here, through a link
    only when FOLLOW) against EXERCISE: its process runs in the sandbox while the references are computed here."""
    from gradlab.practice import sandbox

    if source is None:
        try:
            source = sandbox.read_submission(path, follow=follow)
        except (OSError, ValueError) as e:
            return stopped_result(exercise, path, f"cannot read {path}: {getattr(e, 'strerror', None) or e}", seed=seed)
    stop = preflight(source, path, exercise) if kind == "source" else None  # before any start-up cost
    if stop is not None:
        result = judge(exercise, [], [], {"ok": False, "kind": "syntax" if stop.startswith("syntax error") else
                                          "missing", "error": stop, "trace": ""}, seed)
        result.config = {"file": path}
        return result
    box = sandbox.Sandbox(exercise, seed, source=source, shown=path, kind=kind, lines=lines,
                          code_files=code_files)  # it imports torch
    cases, refs = references(exercise, seed)  # while we work
    got = box.finish(expected=refs)
    result = _judged(exercise, cases, refs, got, seed, path)
    result.config = {"file": path}
    result.metrics["sandbox"] = got["sandbox"]
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


def returned(error: str) -> str:
    """A harness's Returned (the function returned the wrong kind of thing) said as such, not as an exception the
    function raised (a sandbox that reports every exception as "raised" gives 'f() raised on the input …: Returned:
    …')."""
    found = re.match(r"(\w+)\(\) raised on the input '(.*?)': Returned: (.*)$", error, re.S)
    return f"{found[1]}() returned on the input '{found[2]}': {found[3]}" if found else error


PRINTED_LINES = 20  # the last lines of what the submission printed that a check shows


def student_output(result: Result, got: dict) -> None:
    """What the submission printed (its last lines, with the total size) and the warnings it raised, on the Result:
    the report shows them under the checks, --json writes them (metrics printed, printed_bytes, warnings)."""
    printed = got.get("printed") or ""
    if printed.strip():
        lines = printed.rstrip("\n").splitlines()
        tail = "\n".join(lines[-PRINTED_LINES:])[-2000:]
        result.metrics["printed"] = tail
        result.metrics["printed_bytes"] = int(got.get("printed_bytes", len(printed.encode())))
        result.metrics["printed_lines"] = len(lines)
    warnings = [str(w) for w in got.get("warnings") or []]
    if warnings:  # at most 10, each cut to 300 characters
        result.metrics["warnings"] = [w if len(w) <= 300 else w[:299] + "…" for w in warnings[:10]]


def judge(exercise: Exercise, cases: list[dict], refs: list[dict], got: dict, seed: int = 0) -> Result:
    """The Result of a submission whose sandbox returned GOT, against the references REFS on CASES: a row per input,
    a claim per kind of input and per rule, and, when one fails, the diagnosis (gradlab/practice/diagnosis.py)."""
    from gradlab.kit.exercise import GRAPH

    rules = exercise.all_rules()
    result = Result(lesson="check", title=f"{exercise.name}: {exercise.what}", config={}, seed=seed,
                    metrics={"exercise": exercise.name}, claims=[], notes=[])
    student_output(result, got)
    if not got["ok"]:  # every check is there, not reached (NaN fails): a course's points add up the same way
        result.stopped = returned(got["error"])
        result.metrics["trace"] = got.get("trace", "")
        result.claims = [Claim(f"{exercise.name}:{kind}", f"{text} — not reached", math.nan, bound)
                         for kind, (text, bound) in exercise.claims.items()]
        result.claims += [Claim(f"{exercise.name}:extra{i}", f"{text} — not reached", math.nan, bound, op)
                          for i, (text, bound, op) in enumerate(rules)]
        if got.get("kind") == "raised":
            from gradlab.practice import checks_of, diagnosis

            fix = diagnosis.explain_error(checks_of(exercise), got["error"])
            if fix:
                result.metrics["diagnosis"] = fix
        own_code(exercise, got, result)
        return result
    from gradlab.kit.exercise import relative, values
    from gradlab.practice import checks_of, diagnosis

    checks = checks_of(exercise)
    outputs = got["outputs"]
    diffs = [relative(values(o), values(r)) for o, r in zip(outputs, refs, strict=True)]
    bounds = [exercise.claims[c["kind"]][1] for c in cases]
    passed = [d <= b for d, b in zip(diffs, bounds, strict=True)]
    rows = [[c["label"], c["kind"], d, "✓" if p else "✗"] for c, d, p in zip(cases, diffs, passed, strict=True)]
    result.tables.append(Table(f"your {exercise.function}() against the reference, input by input",
                               ["input", "checks", "max relative |Δ|", ""], rows, [None, None, ".3g", None]))
    for kind, (text, bound) in exercise.claims.items():
        worst = max(d for c, d in zip(cases, diffs, strict=True) if c["kind"] == kind)
        result.claims.append(Claim(f"{exercise.name}:{kind}", text, worst, bound))
    measured = list(checks.extra(outputs, cases))
    changed = diagnosis.changed_inputs(exercise, outputs)
    if exercise.keeps:
        measured.append(len(changed))
    if exercise.no_autograd:
        measured.append(max(float(o.get(GRAPH, 0)) for o in outputs))
    result.claims += [Claim(f"{exercise.name}:extra{i}", text, value, bound, op)
                      for i, ((text, bound, op), value) in enumerate(zip(rules, measured, strict=True))]
    if not all(c.passed for c in result.claims):
        if all(passed) and changed:
            result.metrics["diagnosis"] = (
                f"your values are right, but your function changed {', '.join(changed)} in place (an in-place "
                f"operation: -=, mul_, copy_…) where the exercise says {'they are' if len(changed) > 1 else 'it is'}"
                " not changed: compute new tensors (e.g. W - lr * gW rather than W -= lr * gW) and return those")
        elif all(passed) and any(not c.passed for c in result.claims[len(exercise.claims):len(exercise.claims)
                                                                          + len(exercise.rules)]):
            failing = [i for i, c in enumerate(result.claims[len(exercise.claims):]) if not c.passed
                       and i < len(exercise.rules)]
            result.metrics["diagnosis"] = "your values are right, but: " + "; ".join(
                checks.rule_hints[i] if i < len(checks.rule_hints) else exercise.rules[i][0] for i in failing)
        elif all(passed) and exercise.no_autograd and measured[-1] > 0:
            result.metrics["diagnosis"] = (
                "your values are right, but your function built an autograd graph (requires_grad_, "
                "torch.autograd.grad or .backward): this exercise asks for the gradient from the formula alone, "
                "with tensor operations on inputs that do not require grad")
        else:
            result.metrics["diagnosis"] = diagnosis.diagnose(checks, cases, outputs, refs, passed, bounds)
    else:
        note = diagnosis.accepted(checks, cases, outputs, refs, diffs)
        if note:
            result.notes.append(note)
    own_code(exercise, got, result)
    return result


def own_code(exercise: Exercise, got: dict, result: Result) -> None:
    """The check of an exercise that asks students to write what a library already does (Exercise.forbidden): a call
    to one of those, noted in the sandbox, fails it, and says which ("uses torch.nn.utils.clip_grad_norm_, which
    this exercise asks you to write"). Not reached when the submission stopped."""
    if not exercise.forbidden:
        return
    used = [u for u in got.get("used", []) if isinstance(u, str)]
    shown = [n for n in exercise.forbidden if not n.startswith(("torch.ops.", "torch._"))] or exercise.forbidden
    one = len(shown) == 1  # torch's private aliases and aten ops of those (forbidden too) are not listed
    text = (f"your code {'does not use' if one else 'uses none of'} {', '.join(shown)} (the exercise "
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
