"""`gradlab check FILE`: run a submission in the sandbox, compare it with the reference on every generated input, run
the lesson's claims on its outputs, and diagnose a wrong answer: a known mistake by name and its fix, else the first
input where it differs. The result is a Result like a lesson's: a table of checks, claims with ✓/✗, exit code."""

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
MATCHES = 1e-5  # a submission "is" a known mistake when its outputs agree with that mistake's this closely


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
                       f'"write {exercise.function}.{name}")\n' for name, arg in (("forward", "x"), ("backward", "dy")))
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


def run_check(path: str, exercise: Exercise, seed: int = 0) -> Result:
    from gradlab.practice import sandbox

    box = sandbox.Sandbox(path, exercise, seed)  # started first: it imports torch while we work
    from gradlab import threads
    from gradlab.practice import checks_of

    threads.apply(1)  # as the submission computes (OMP_NUM_THREADS=1): a known mistake then matches it to the bit

    checks = checks_of(exercise)
    cases = checks.cases(seed)
    refs = [checks.call(checks.reference, c) for c in cases]  # computed here, never in the submission's process
    result = judge(exercise, cases, refs, box.finish(), seed)
    result.config = {"file": path}
    return result


def judge(exercise: Exercise, cases: list[dict], refs: list[dict], got: dict, seed: int = 0) -> Result:
    """The Result of a submission whose sandbox returned GOT, against the references REFS on CASES."""
    from gradlab.practice import checks_of, sandbox
    from gradlab.practice.exercise import relative

    checks = checks_of(exercise)
    notes = []
    if got.get("printed_bytes", 0) > sandbox.SHOWN:
        notes.append(f"your code printed {got['printed_bytes']:,} bytes; the first {sandbox.SHOWN:,} characters: "
                     f"{got['printed'][:200]!r}…")
    result = Result(lesson="check", title=f"{exercise.name}: {exercise.what}", config={}, seed=seed,
                    metrics={"exercise": exercise.name}, claims=[], notes=notes)
    if not got["ok"]:  # every check is there, not reached (NaN fails): a course's points add up the same way
        result.stopped = got["error"]
        result.metrics["trace"] = got.get("trace", "")
        result.claims = [Claim(f"{exercise.name}:{kind}", f"{text} — not reached", math.nan, bound)
                         for kind, (text, bound) in checks.claims.items()]
        result.claims += [Claim(f"{exercise.name}:extra{i}", f"{text} — not reached", math.nan, bound, op)
                          for i, (text, _, bound, op) in enumerate(checks.extra(refs, cases))]
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
    return result


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
