"""The exceptions every front end knows: bad input (GradlabError, exit 2), a run that could not finish (RunFailed,
a GradlabError, exit 1) and a stop asked for by a signal (Interrupted, exit 128 + the signal's number). Each carries
its exit code (as click's UsageError.exit_code), so the command line ends every GradlabError the same way: its one
line, then exit(e.exit_code)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class GradlabError(Exception):
    """Bad input (a number, a name, a file, a device): the message says what is wrong and how to fix it, in one line.
    Its subclasses say in exit_code how else the command line ends (RunFailed: 1)."""

    exit_code = 2  # what the command line exits with after printing the message


class OptionError(GradlabError):
    """A value one option cannot take, worded by the front end that took it. Its message is the command line's
    (and a --config file's): `--batch-size must be at least 1, got 0; try --batch-size 100`; gradlab.run words it
    with words(python=True): `batch_size must be at least 1, got 0; e.g. batch_size=100`.

    NAME: the option's field name. PROBLEM: what is wrong, said after the option's name; or, where the message names
    another option or puts the value beside the name, a function of SAY that words it all: say("envs") is `--envs`
    or `envs`, say("backend", "gloo") `--backend gloo` or `backend='gloo'`, say("uneven", True) `--uneven` or
    `uneven=True` (a flag is spelled --field-name). EXAMPLE: a good value to suggest, or None."""

    def __init__(self, name: str, problem: str | Callable[..., str], *, example: Any = None) -> None:
        self.name, self.problem, self.example = name, problem, example
        super().__init__(self.words(python=False))

    def words(self, *, python: bool) -> str:
        """The message in the caller's terms: option names as keywords (PYTHON) or as flags."""
        say = _as_keyword if python else _as_flag
        text = self.problem(say) if callable(self.problem) else f"{say(self.name)} {self.problem}"
        if self.example is None:
            return text
        return f"{text}; {'e.g.' if python else 'try'} {say(self.name, self.example)}"

    def in_python(self, call: str) -> GradlabError:
        """The error as CALL (e.g. "gradlab.run('mnist')") raises it: option names as keywords."""
        return GradlabError(f"{call}: {self.words(python=True)}")


_NO_VALUE = object()


def _as_flag(name: str, value: Any = _NO_VALUE) -> str:
    flag = "--" + name.replace("_", "-")
    return flag if value is _NO_VALUE or value is True else f"{flag} {value}"  # a lone flag sets True


def _as_keyword(name: str, value: Any = _NO_VALUE) -> str:
    return name if value is _NO_VALUE else f"{name}={value!r}"


def shorten(text: str, most: int = 80, count: bool = False) -> str:
    """TEXT as a one-line message shows it: cut after MOST characters (COUNT: saying how many there were)."""
    if len(text) <= most:
        return text
    return text[:most] + "…" + (f" ({len(text)} characters)" if count else "")


def check(condition: bool, message: str) -> None:
    """Raise GradlabError(message) unless condition holds: validation at the edge, with the fix in the text."""
    if not condition:
        raise GradlabError(message)


def check_option(condition: bool, name: str, problem: str | Callable[..., str], *, example: Any = None) -> None:
    """Raise OptionError(NAME, PROBLEM, example=EXAMPLE) unless CONDITION holds: a Config's check of one option."""
    if not condition:
        raise OptionError(name, problem, example=example)


class RunFailed(GradlabError):
    """A run that could not finish for a reason other than bad input (a worker process died or stopped answering):
    the CLI prints the message as one line and exits with code 1 (no claim could be checked)."""

    exit_code = 1


class Interrupted(Exception):
    """Ctrl-C (or SIGTERM, SIGHUP), carried past click (which would print a blank line and call it an abort); raised
    too by a grader that stopped early and wrote what it had graded first."""

    def __init__(self, signum: int = 2) -> None:
        super().__init__(signum)
        self.signum = signum
        self.exit_code = 128 + signum  # as a shell reports a process the signal ended: 130 for Ctrl-C
