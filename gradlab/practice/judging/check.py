"""Checking one submission: the pre-flight first (a syntax error or a missing function is reported at once, before any
process starts), then its process in the sandbox while the references are computed here, then the judging
(gradlab/practice/judging/judge.py). The result is a Result like a lesson's: a table of checks, claims with ✓/✗, what
the
submission printed and warned, exit code."""

from __future__ import annotations

import functools
import threading

from gradlab.kit import heap, threads
from gradlab.kit.exercise import Exercise
from gradlab.kit.result import Result
from gradlab.kit.text import one_line
from gradlab.practice import all_exercises, checks_of
from gradlab.practice.judging.judge import Reference, judge
from gradlab.practice.judging.submission import Submission, preflight
from gradlab.practice.sandbox import box
from gradlab.practice.sandbox.returned import Received

JUDGE_S = 60.0  # gradlab's own judging of one submission (references, diagnosis) may take this long at most


def run_check(submission: Submission, seed: int = 0) -> Result:
    """SUBMISSION checked against its exercise with the inputs of SEED: its process runs in the sandbox while the
    references are computed here. Raises on gradlab's own trouble (result_of() does not)."""
    exercise, shown = submission.exercise, submission.shown
    if submission.stop is not None:
        return stopped_result(exercise, shown, submission.stop, seed)
    stop = preflight(submission.source, shown, exercise) if submission.kind == "source" else None
    if stop is not None:  # before any start-up cost
        kind = "syntax" if stop.startswith("syntax error") else "missing"
        return judge(exercise, None, Received.stopped(kind, stop), seed, file=shown)
    sandbox = box.Sandbox(exercise, seed, source=submission.source, shown=shown, kind=submission.kind,
                          lines=submission.lines, code_files=submission.code_files)  # it imports torch
    reference = references(exercise, seed)  # while we wait
    got = sandbox.finish(expected=reference.outputs)
    return _judged(exercise, reference, got, seed, shown)


def result_of(submission: Submission, seed: int) -> Result:
    """SUBMISSION's Result, never an exception: gradlab's own trouble with one file is that file's failed check,
    said in one line, and a class's other files go on."""
    try:
        return run_check(submission, seed)
    except Exception as e:
        why = one_line(f"{type(e).__name__}: {e}", 200)
        return environment_result(submission.exercise, submission.shown, f"gradlab could not check this file: {why}",
                                  seed)


def environment_result(exercise: Exercise, shown: str, error: str, seed: int = 0) -> Result:
    """stopped_result() for a check that ended because of the machine (gradlab's own trouble, its judging cut short):
    not a grade. metrics["environment"] says so: `gradlab grade` keeps no such record and tells the teacher."""
    return stopped_result(exercise, shown, error, seed, environment=error)


def stopped_result(exercise: Exercise, shown: str, error: str, seed: int = 0, environment: str = "") -> Result:
    """The Result of a submission that could not run at all (unreadable, the wrong exercise, not graded): every check
    there, not reached, with ERROR (one line) as why. It needs no reference, so it never raises."""
    return judge(exercise, None, Received.stopped("died", error), seed, file=shown, environment=environment)


def references(exercise: Exercise, seed: int) -> Reference:
    """EXERCISE's Reference for SEED: its checks, its inputs and the reference's outputs on them, computed here,
    never in the submission's process; once per exercise and seed (a class's folder shares them)."""
    threads.apply(1)  # as the submission computes (OMP_NUM_THREADS=1): a known mistake then matches it to the bit
    reference = _references(exercise.name, getattr(exercise, "folder", None), seed)
    heap.imported()  # torch and the exercise's checks are loaded: frozen (gradlab.kit.heap; once, in gradlab's own)
    return reference


@functools.lru_cache(maxsize=8)
def _references(name: str, folder: str | None, seed: int) -> Reference:
    """(FOLDER: a teacher's own exercise's, so that two courses' exercises of one name are two entries.)"""
    checks = checks_of(all_exercises()[name])
    cases = checks.cases(seed)
    return Reference(checks, cases, [checks.run(None, c) for c in cases])


def _judged(exercise: Exercise, reference: Reference, got: Received, seed: int, shown: str) -> Result:
    """judge(), with a time limit and no way to crash gradlab: a failure of the judging is that submission's failed
    check, said in one line, and the other submissions of a folder go on."""
    done: dict = {}

    def work() -> None:
        try:
            done["result"] = judge(exercise, reference, got, seed, file=shown)
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
    return environment_result(exercise, shown, why, seed)


def graphs(submission: Submission, seed: int = 0) -> list:
    """`gradlab check FILE --graph`: the submission's first backward pass on the first input, caught where it runs
    (the sandbox) and sent back as plain data, and the reference's on the same input, caught here; the student's
    first node whose gradient differs is marked. Raises GradlabError when there is nothing to draw."""
    from gradlab.errors import GradlabError
    from gradlab.practice.inside import backward

    exercise = submission.exercise
    if submission.stop is not None:
        raise GradlabError(f"--graph: {submission.stop}")
    sandbox = box.Sandbox(exercise, seed, source=submission.source, shown=submission.shown, kind=submission.kind,
                          lines=submission.lines, code_files=submission.code_files, graph=True)
    checks = checks_of(all_exercises()[exercise.name])
    case = checks.cases(seed)[0]
    caught = backward.Caught(checks.call, case)
    try:
        expected, why_none = caught(checks.reference, case), "the reference computes this one without autograd"
    except Exception:  # a reference the harness cannot call (ddp_graded's runs the model on the whole batch at once)
        expected, why_none = checks.run(None, case), "the reference is not run through the harness here"
        caught.data = None
    got = sandbox.finish(expected=[expected])
    if not got.ok:
        raise GradlabError(f"--graph: your code did not run on the input '{case['label']}': {got.error}")
    if got.graph is None:
        raise GradlabError(f"--graph: {exercise.function}() ran no backward pass on the input '{case['label']}' "
                           "(no torch.autograd.grad, no .backward()): there is no graph of yours to draw")
    mine = backward.graph(got.graph, f"your {exercise.function}(): its backward pass on '{case['label']}'")
    if caught.data is None:
        mine.note = f"look at: {why_none}, so there is no graph of it to compare"
        return [mine]
    theirs = backward.graph(backward.checked(caught.data), "the reference's, on the same input")
    backward.first_difference(mine, theirs)
    return [mine, theirs]
