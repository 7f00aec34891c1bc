"""The `gradlab` command: click only. main.py is the group and the lesson commands, options.py turns a lesson's
declared options into click options, and one module per family of commands (classroom, practice, docs); process.py
is what a command-line process does about signals and its environment.

This module is the entry point (`gradlab.cli:main`, and `python -m gradlab`) and imports nothing itself: a Ctrl-C
while the command's modules load (a quarter of a second, several on a busy machine) is one line and exit code 130
like a Ctrl-C anywhere later, not a traceback and a process killed by SIGINT."""

from __future__ import annotations


def main() -> None:
    """Load the command, then run it. GradlabGroup.main (gradlab.cli.main) turns a stop while a command runs into its
    line and exit code; what reaches this handler is a Ctrl-C while the modules load, or a second one while the first
    one's line is written."""
    try:
        from gradlab.cli.main import main as run_command

        run_command()
    except KeyboardInterrupt:
        _interrupted()
    except Exception as e:  # CPython 3.11 turns a Ctrl-C that lands in a class's making into a RuntimeError
        if not _interrupt_behind(e):  # ("Error calling __set_name__"), with the KeyboardInterrupt as its cause
            raise
        _interrupted()


def _interrupt_behind(error: BaseException | None) -> bool:
    """Whether ERROR was raised because of a KeyboardInterrupt (its cause, or the cause's cause...)."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def _interrupted() -> None:
    from gradlab.cli import process  # the standard library only

    process.exit_stopped(2)
