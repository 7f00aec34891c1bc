"""A submission judged in the test's own process, for speed: what the sandbox's child does (import the file, call its
function through the exercise's harness on every input, keep what it printed and warned), without the process. Only
for the suite's own files (the corpus, the known mistakes): `gradlab check` never runs a submission in its process."""

from __future__ import annotations

import contextlib
import io
import runpy
import traceback
import warnings

from gradlab.kit.harness import Returned
from gradlab.practice import all_exercises, checks_of
from gradlab.practice.inside import child
from gradlab.practice.judging.judge import Reference, judge
from gradlab.practice.judging.submission import preflight
from gradlab.practice.sandbox.returned import Received

_CASES: dict[str, tuple[list[dict], list[dict]]] = {}
_FORBIDDEN: dict = {}


def forbidden(name: str):
    """The child's watch over exercise NAME's forbidden calls (gradlab.practice.inside.child.Forbidden), made once per
    test
    (restore_library() puts the library back after each: tests/conftest.py): it wraps the library's functions, and
    notes a call only while a submission's function runs."""
    if name not in _FORBIDDEN:
        from gradlab.practice.inside.child import Forbidden

        _FORBIDDEN[name] = Forbidden(list(all_exercises()[name].forbidden))
    return _FORBIDDEN[name]


def restore_library() -> None:
    """Undo every watch's wrapping: a later test in this process calls the library's own functions (torch.func's
    jvp failed on a wrapped torch.ops.aten._log_softmax left by mnist.LogSoftmax's watch)."""
    while _FORBIDDEN:
        _FORBIDDEN.popitem()[1].restore()


def reference(name: str) -> Reference:
    """Exercise NAME's checks, its inputs on seed 0 and the reference's outputs on them (computed once per run)."""
    if name not in _CASES:
        checks = checks_of(all_exercises()[name])
        cases = checks.cases(0)
        _CASES[name] = Reference(checks, cases, [checks.run(None, c) for c in cases])
    return _CASES[name]


def outputs_of(name: str, fn, trace: bool = True) -> Received:
    """What the sandbox would return for FN (a Received: its outputs, or how it stopped), with what it printed
    and warned (TRACE: and its operations traced, as the child traces those of an answer whose outputs are finite)."""
    exercise, checks = all_exercises()[name], checks_of(all_exercises()[name])
    cases = reference(name).cases
    watch = forbidden(name)
    watch.used.clear()
    watched = watch.watch(fn)
    printed, outputs, got = io.StringIO(), [], None
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(printed):
        warnings.simplefilter("always")
        for case in cases:
            try:
                watch.active = isinstance(fn, type)  # a class is watched while the harness uses it, as in the child
                outputs.append(checks.call(watched, case))
            except NotImplementedError:
                got = {"ok": False, "kind": "todo", "error": f"{exercise.function} raises NotImplementedError: write "
                                                             "its body", "trace": ""}
                break
            except Returned as e:
                got = {"ok": False, "kind": "output", "trace": "",
                       "error": f"{exercise.function}() returned on the input '{case['label']}': {e}"}
                break
            except Exception as e:  # said as the child says it: the student's line, its tensors, a backward's line
                e = e.with_traceback(e.__traceback__.tb_next)  # this frame is the child's, not the student's
                forward = ""
                if isinstance(e, RuntimeError) and not any(not child._ours(f.filename)
                                                           for f in traceback.extract_tb(e.__traceback__)):
                    forward = child.anomaly(lambda c=case: checks.call(watched, c))
                line, trace = child.student_trace(e, forward)
                got = {"ok": False, "kind": "raised", "trace": trace, "error": f"{exercise.function}() raised on the "
                       f"input '{case['label']}': {line}"}
                break
    watch.active = False
    first = next((i for i, o in enumerate(outputs) if child._nonfinite(o)), None) if got is None else None
    own = {c.co_filename for c in _codes(fn)}  # the student's file: the harness's (a course's own) is not theirs
    line = child.first_nonfinite(lambda: checks.call(watched, cases[first]), mine=own.__contains__,
                                 function=fn) if first is not None else ""
    if got is None and first is None and trace and not isinstance(fn, type) and checks.harness.prepare is None:
        # as the child traces them
        from gradlab.practice.inside.trace import trace_inputs

        got = {"ok": True, "outputs": outputs, "traced": tuple(trace_inputs(lambda c: checks.call(fn, c), cases,
                                                                            mine=own.__contains__))}
    got = got or {"ok": True, "outputs": outputs, **({"nonfinite": {"input": first, "line": line}} if line else {})}
    return Received(**got, used=tuple(watch.used), printed=printed.getvalue(),
                    printed_bytes=len(printed.getvalue().encode()),
                    warnings=tuple(f"{w.category.__name__}: {w.message}" for w in caught))


def _codes(fn) -> list:
    """The code objects of FN, a function or a class (its methods)."""
    members = vars(fn).values() if isinstance(fn, type) else [fn]
    return [f.__code__ for f in (getattr(m, "__func__", m) for m in members) if hasattr(f, "__code__")]


def judged(name: str, fn, trace: bool = True):
    """The Result for FN as if it had run in the sandbox (its outputs through the exercise's harness)."""
    return judge(all_exercises()[name], reference(name), outputs_of(name, fn, trace))


def judged_file(path: str, name: str, trace: bool = True):
    """The Result for the submission file PATH: pre-flight, then its function judged in this process."""
    exercise = all_exercises()[name]
    with open(path, "rb") as f:
        stop = preflight(f.read(), path, exercise)
    if stop is not None:
        return judge(exercise, None, Received.stopped("syntax", stop))
    namespace = runpy.run_path(path, run_name="student")
    return judged(name, namespace[exercise.function], trace)
