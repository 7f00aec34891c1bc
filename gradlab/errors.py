"""The exceptions every front end knows: bad input (GradlabError, exit 2), a run that could not finish (RunFailed,
exit 1) and a stop asked for by a signal (Interrupted, exit 128 + the signal's number)."""


class GradlabError(Exception):
    """Bad input (a number, a name, a file, a device): the message says what is wrong and how to fix it."""


def shorten(text: str, most: int = 80, count: bool = False) -> str:
    """TEXT as a one-line message shows it: cut after MOST characters (COUNT: saying how many there were)."""
    if len(text) <= most:
        return text
    return text[:most] + "…" + (f" ({len(text)} characters)" if count else "")


def check(condition: bool, message: str) -> None:
    """Raise GradlabError(message) unless condition holds: validation at the edge, with the fix in the text."""
    if not condition:
        raise GradlabError(message)


class RunFailed(Exception):
    """A run that could not finish for a reason other than bad input (a worker process died or stopped answering):
    the CLI prints the message as one line and exits with code 1."""


class Interrupted(Exception):
    """Ctrl-C (or SIGTERM, SIGHUP), carried past click (which would print a blank line and call it an abort); raised
    too by a grader that stopped early and wrote what it had graded first."""

    def __init__(self, signum: int = 2) -> None:
        super().__init__(signum)
        self.signum = signum
