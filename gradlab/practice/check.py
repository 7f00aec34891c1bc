"""`gradlab check FILE`: parse the file first (a syntax error or a missing function is reported at once, before any
process starts), run the submission in the sandbox, compare it with the reference on every generated input, run the
lesson's claims on its outputs, and diagnose a wrong answer: a known mistake by name and its fix, else what the
experiments measure (gradlab/practice/diagnosis.py). The result is a Result like a lesson's: a table of checks,
claims with ✓/✗, what the submission printed and warned, exit code."""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path

from gradlab.errors import GradlabError, check
from gradlab.practice import EXERCISES
from gradlab.practice.exercise import Exercise
from gradlab.result import Claim, Result, Table

MARKER = re.compile(r"^# gradlab-exercise: (\S+)\s*$", re.M)


def exercise_of(path: str, override: str | None) -> Exercise:
    """The exercise FILE says it is (its `# gradlab-exercise: NAME` line), or OVERRIDE (--exercise)."""
    p = Path(path)
    check(p.is_file(), f"{path} is not a file; give the .py file that `gradlab exercise NAME` wrote")
    if override is None:
        try:
            found = MARKER.search(p.read_text(encoding="utf-8", errors="replace")[:100_000])
        except OSError as e:
            raise GradlabError(f"cannot read {path}: {e.strerror}") from None
        check(found is not None, f"{path} does not say which exercise it is (no '# gradlab-exercise: NAME' line); "
                                 f"add --exercise NAME (gradlab exercises lists them)")
        override = found.group(1)
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
    return (f'"""{head}\n\n'
            f"Write the body of {exercise.function} below, then check it:\n\n"
            f"    gradlab check {exercise.function}.py\n"
            f'"""\n\n# gradlab-exercise: {exercise.name}\n'
            "import torch\nimport torch.nn.functional as F\n\n\n"
            f'{exercise.signature}\n    """{doc.lstrip()}\n    """\n{body}')


HEADER = "import math\n\nimport torch\nimport torch.nn.functional as F\n\n"


def source_file(fn, exercise: Exercise, folder: str) -> str:
    """FN's source (a function or class defined in a notebook cell or a module) as a checkable file in FOLDER."""
    import inspect

    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        source = _cell_of_class(fn)
    if source is None:
        raise GradlabError(f"cannot read the source of {fn!r}: define it in a notebook cell or a .py file")
    name = getattr(fn, "__name__", exercise.function)
    alias = "" if name == exercise.function else f"\n\n{exercise.function} = {name}\n"
    path = Path(folder) / f"{exercise.function}.py"
    path.write_text(f"{HEADER}# gradlab-exercise: {exercise.name}\n\n{source}{alias}", encoding="utf-8")
    return str(path)


def _cell_of_class(cls) -> str | None:
    """A class defined in a notebook cell: inspect cannot find its source (its module is __main__, which has no
    file), but its methods know their cell; the cell's whole text is the class (and whatever else the cell holds)."""
    import linecache

    if not isinstance(cls, type):
        return None
    for attr in vars(cls).values():
        code = getattr(getattr(attr, "__func__", attr), "__code__", None)
        if code is not None and linecache.getlines(code.co_filename):
            return "".join(linecache.getlines(code.co_filename))
    return None


def check_function(fn, name: str) -> Result:
    """gradlab.check(FN, NAME): FN, defined in a notebook cell, checked as `gradlab check` checks a file (in a
    separate process; self-contained: torch, F and math are imported for it)."""
    import tempfile

    check(isinstance(name, str) and name in EXERCISES, f"unknown exercise {name!r}; gradlab.exercises() lists them")
    check(callable(fn), f"gradlab.check: {fn!r} is not a function")
    from gradlab.report import html  # noqa: F401 — registers how Jupyter draws the Result

    with tempfile.TemporaryDirectory(prefix="gradlab-check-") as folder:
        return run_check(source_file(fn, EXERCISES[name], folder), EXERCISES[name])


def preflight(path: str, exercise: Exercise) -> str | None:
    """What stops FILE before anything of it runs, found without starting a process or importing torch: a syntax
    error, or no top-level definition of the function (or class) the exercise asks for. None when neither. The file
    is only parsed (ast), never run here."""
    import ast
    import difflib

    try:
        source = Path(path).read_bytes()[:5_000_000]
        tree = ast.parse(source, filename=path)
    except SyntaxError as e:
        return f"syntax error at line {e.lineno}: {e.msg}"
    except (OSError, ValueError):
        return None  # unreadable or odd bytes: the sandbox reports it as it runs the file
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


def run_check(path: str, exercise: Exercise, seed: int = 0) -> Result:
    stop = preflight(path, exercise)  # before any start-up cost: no process, no torch
    if stop is not None:
        kind = "syntax" if stop.startswith("syntax error") else "missing"
        result = judge(exercise, [], [], {"ok": False, "kind": kind, "error": stop, "trace": ""}, seed)
        result.config = {"file": path}
        return result
    from gradlab.practice import sandbox

    box = sandbox.Sandbox(path, exercise, seed)  # started first: it imports torch while we work
    from gradlab import threads
    from gradlab.practice import checks_of

    threads.apply(1)  # as the submission computes (OMP_NUM_THREADS=1): a known mistake then matches it to the bit

    checks = checks_of(exercise)
    cases = checks.cases(seed)
    refs = [checks.run(None, c) for c in cases]  # computed here, never in the submission's process
    result = judge(exercise, cases, refs, box.finish(), seed)
    result.config = {"file": path}
    return result


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
    from gradlab.practice.exercise import GRAPH

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
        return result
    from gradlab.practice import checks_of, diagnosis
    from gradlab.practice.exercise import relative, values

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
    return result
