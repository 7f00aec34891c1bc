"""Grading many submissions: as many at a time as the CPUs and memory gradlab is given allow (capacity.plan(): one
under a 1-CPU quota, one in the userns mode without a cgroup), each in its own sandbox, stopped at once by Ctrl-C or
SIGTERM. `gradlab check FOLDER` and `gradlab grade` both grade through grade_all().

Only the calling (main) thread starts a check, and it waits in short slices, so a stop signal is seen within one
slice, wherever it landed, and before another check starts: after Ctrl-C no queued submission starts. The running
checks are then killed (box.stop_all). Their threads are daemons: a check in progress never holds gradlab's exit.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from gradlab.kit.result import Result
from gradlab.practice.judging import check
from gradlab.practice.judging.submission import Submission
from gradlab.practice.sandbox import box, capacity, modes

WAKE_S = 0.1  # the main thread looks for a stop signal at least this often


@dataclass(frozen=True)
class Graded:
    """What grade_all() did: RESULTS in the order of the submissions given, None for each one a stop came before
    (or during); SIGNUM, the number of the signal that stopped it (2 for Ctrl-C, 15 for SIGTERM), None when every
    submission was graded."""

    results: list[Result | None]
    signum: int | None


@dataclass(frozen=True)
class _Done:
    """One check that ended, in a worker thread: its Result and how long it took, or what it raised."""

    index: int
    result: Result | None
    seconds: float
    error: BaseException | None = None


def grade_all(submissions: list[Submission], seed: int,
              each: Callable[[int, Result, float], None] | None = None) -> Graded:
    """Every submission's Result (check.result_of: one file's trouble never stops the others), at_once() at a time;
    EACH(index, result, seconds), in this thread, as each ends. Ctrl-C or SIGTERM (a KeyboardInterrupt here, or one
    a check raised) stops it at once: no other check starts, the running ones are killed, and what was graded comes
    back with the signal's number."""
    results: list[Result | None] = [None] * len(submissions)
    ended: queue.SimpleQueue[_Done] = queue.SimpleQueue()
    try:  # the loop is a function of its own: CPython 3.11 can lose a signal raised at a loop's first jump inside a
        _grade(submissions, seed, each, results, ended)  # try (python/cpython#108214)
        return Graded(results, None)
    except KeyboardInterrupt as e:
        while not ended.empty():  # checks that ended before the stop: graded
            done = ended.get()
            if done.error is None:
                results[done.index] = done.result
        box.stop_all()
        return Graded(results, getattr(e, "signum", 2))


def at_once() -> int:
    """Submissions graded at the same time (capacity.plan()): 1 in the userns mode without a cgroup
    (modes.userns_message), where nothing bounds a sandbox's CPU as a whole and a CPU flood in one would starve the
    right answer beside it."""
    return capacity.plan(modes.detect().mode).at_once


def _grade(submissions: list[Submission], seed: int, each, results: list[Result | None],
           ended: queue.SimpleQueue) -> None:
    """The loop of grade_all(): start checks while fewer than at_once() run, and take each one's end, filling RESULTS;
    it wakes every WAKE_S to see a signal (one delivered to another thread is seen only when this one runs)."""
    waiting, running, most = deque(range(len(submissions))), 0, at_once()
    while waiting or running:
        while waiting and running < most:
            index = waiting.popleft()
            threading.Thread(target=_work, args=(index, submissions[index], seed, ended), daemon=True).start()
            running += 1
        try:
            done = ended.get(timeout=WAKE_S)
        except queue.Empty:
            continue
        running -= 1
        if done.error is not None:
            raise done.error
        results[done.index] = done.result
        if each is not None:
            each(done.index, done.result, done.seconds)


def _work(index: int, submission: Submission, seed: int, ended: queue.SimpleQueue) -> None:
    started = time.monotonic()
    try:
        result = check.result_of(submission, seed)
    except BaseException as e:  # a KeyboardInterrupt: the main thread stops everything
        ended.put(_Done(index, None, 0.0, e))
        return
    ended.put(_Done(index, result, time.monotonic() - started))
