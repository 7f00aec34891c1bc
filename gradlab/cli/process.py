"""What the process and its environment can do to a run, made into one line and an exit code: stop signals, a
console that cannot show every character, a deleted current folder, bad thread variables, a closed pipe."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import NoReturn

from gradlab.ascii import is_unicode
from gradlab.errors import GradlabError


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the program is, as Ctrl-C's KeyboardInterrupt is: every cleanup that Ctrl-C
    runs (ddp's workers stopped and reaped, no half-written file) runs for them too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame) -> None:
    raise Terminated(signum)


SIGNAL_WORDS = {2: "interrupted", 15: "terminated (SIGTERM)", 1: "terminated (SIGHUP: the terminal closed)"}


def handle_stop_signals() -> None:
    """SIGTERM and SIGHUP like Ctrl-C: one line, exit 128 + the signal's number."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _terminate)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def stop_signals_held() -> Iterator[None]:
    """Run the block with Ctrl-C, SIGTERM and SIGHUP noted, not raised; raise the first one noted as it ends.
    For `import torch`: its C start-up imports numpy and takes any error there, a KeyboardInterrupt too, for "no
    numpy", so a Ctrl-C that lands in it was swallowed and the run went on (to the end, or to an error of the
    half-imported numpy's). Holding it costs nothing but a reply delayed until torch has loaded."""
    if threading.current_thread() is not threading.main_thread():
        yield  # handlers can only be set in the main thread; gradlab's commands run there
        return
    pending: list[int] = []
    previous = {s: signal.signal(s, lambda signum, frame: pending.append(signum)) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if pending:
            signal.raise_signal(pending[0])  # to the handler just restored: KeyboardInterrupt, or Terminated


def exit_stopped(signum: int) -> NoReturn:
    """Exit after a stop signal: its line on stderr, in plain text (no rich: loading a module now could be cut by a
    second Ctrl-C, and a C extension cut half-way while loading prints a warning of its own when loaded again), then
    exit code 128 + the signal's number (130 for Ctrl-C)."""
    sys.stderr.write(f"gradlab: error: {SIGNAL_WORDS.get(signum, 'interrupted')}\n")
    sys.stderr.flush()
    forget_string_eval_interrupt()
    sys.exit(128 + signum)


def forget_string_eval_interrupt() -> None:
    """Call before exiting on a KeyboardInterrupt that was caught. CPython (3.11; 3.12's code is the same) marks
    a KeyboardInterrupt "unhandled" as it leaves code run from a string (exec/eval of a str: every dataclass's
    __init__ is made so, and torch defines hundreds as it loads) even though a caller then catches it; under
    `python -m gradlab` the interpreter, at its very end, then kills itself with SIGINT (returncode -2, the shell's
    130) instead of exiting with the code sys.exit was given. Every string eval clears that mark as it starts, so
    a trivial one clears it."""
    eval("None")  # a constant: run only for the mark it clears


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def hostile_environment() -> None:
    """What the environment can do to a run before it starts, made harmless or one line (GradlabError, exit 2):
    * a console whose encoding cannot show every character (a legacy Windows code page, PYTHONIOENCODING=ascii):
      what it cannot show is replaced, never a UnicodeEncodeError (rich output is spelled in ASCII, see
      report/console.py; this covers click's help and messages);
    * a current folder that was deleted: one line;
    * OMP_NUM_THREADS and friends that are not a positive whole number: dropped before torch loads (OpenMP would
      print a warning of its own), since gradlab sets torch's thread count itself (--threads)."""
    for stream in (sys.stdout, sys.stderr):
        if not is_unicode(getattr(stream, "encoding", None) or "utf-8") and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    try:
        os.getcwd()
    except OSError:
        raise GradlabError("the current folder no longer exists (it was deleted or moved); cd to a folder that exists "
                           "and run gradlab again") from None
    for name in THREAD_VARIABLES:
        value = os.environ.get(name)
        if value is not None and not (value.strip().isdigit() and int(value) >= 1):
            del os.environ[name]


def quiet_stdout() -> None:
    """After a broken pipe, point standard output at /dev/null so that Python's exit flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
