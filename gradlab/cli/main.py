"""The `gradlab` command: a click group with one subcommand per lesson, built from the lesson's declared options.

Only click, the lessons' settings and the torch-free runner are imported at start-up: torch, rich and the lessons
themselves are imported when a lesson runs, so `gradlab --help` stays fast. A lesson's command parses its options
(declared once, as its Config's fields: gradlab.kit.options; made click options by gradlab.cli.options), hands the
ones the user typed to gradlab.runner.resolve (the one path from options to a run, with --quick and --config), runs
the lesson and hands the Result to the report layer. The classroom, step and student (practice) commands live in
gradlab.cli.classroom, gradlab.cli.step and gradlab.cli.student.
"""

from __future__ import annotations

import sys
from typing import Any

import click
from click.core import ParameterSource

from gradlab import runner
from gradlab.ascii import printable
from gradlab.cli import classroom, process, step, student
from gradlab.cli import docs as docs_site
from gradlab.cli.options import click_params
from gradlab.errors import GradlabError, Interrupted
from gradlab.kit import heap
from gradlab.lessons import LESSONS, LessonInfo
from gradlab.report.files import STDOUT, write_json, write_plot
from gradlab.version import __version__


def _printable_help(text: str) -> str:
    """Help text the console can show: click writes UTF-8 to a console it thinks misconfigured (ASCII), so the
    symbols are spelled in ASCII here, before click sees them."""
    return printable(text, getattr(sys.stdout, "encoding", None) or "utf-8")


class LessonCommand(click.Command):
    """Flags that set the same option to different values (--optimizer / --manual-grad, --stop-grad /
    --placeholder) exclude each other: giving two of them is an error, not "the last one wins"."""

    def get_help(self, ctx: click.Context) -> str:
        return _printable_help(super().get_help(ctx))

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = [a.split("=", 1)[0] for a in (args[:args.index("--")] if "--" in args else args)]
        groups: dict[str, list[str]] = {}
        for p in self.params:
            if isinstance(p, click.Option) and p.is_flag and not p.is_bool_flag:
                groups.setdefault(p.name, []).extend(o for o in p.opts if o in given)
        for flags in groups.values():
            if len(set(flags)) > 1:
                raise click.UsageError(f"{' and '.join(dict.fromkeys(flags))} exclude each other; give one", ctx)
        return super().parse_args(ctx, args)


class _ReaderLeft(Exception):
    """A command's output hit a broken pipe (`gradlab … | head`): not an OSError, so that click lets it through."""


class GradlabGroup(click.Group):
    """Bad input of any kind becomes one line on stderr and exit code 2, never a traceback."""

    command_class = LessonCommand

    def get_help(self, ctx: click.Context) -> str:
        return _printable_help(super().get_help(ctx))

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as e:
            raise Interrupted(getattr(e, "signum", 2)) from None
        except BrokenPipeError:  # past click, which turns an EPIPE inside a command into exit code 1 (every click)
            raise _ReaderLeft() from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # teaching order, as added below, not alphabetical

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:  # everything inside: a Ctrl-C at any point of the command is its one line and 130
            process.handle_stop_signals()
            process.hostile_environment()
            code = super().main(args, prog_name or "gradlab", complete_var, standalone_mode=False, **extra)
        except click.ClickException as e:  # click's own: an unknown option, a missing argument (bad input)
            hint = f" (see `{e.ctx.command_path} --help`)" if getattr(e, "ctx", None) else ""
            _error(e.format_message().replace("\n", " ") + hint)
            sys.exit(2)
        except GradlabError as e:  # bad input (2), a run that could not finish (RunFailed, 1): the error says which
            _error(str(e))
            sys.exit(e.exit_code)
        except (Interrupted, click.Abort, KeyboardInterrupt) as e:  # Ctrl-C, SIGTERM, SIGHUP (outside a command too)
            process.exit_stopped(getattr(e, "signum", 2))
        except (BrokenPipeError, _ReaderLeft):  # `gradlab … | head`: the reader left: not a failed claim, no message
            process.quiet_stdout()
            sys.exit(141)  # 128 + SIGPIPE, as a shell reports a program killed by a broken pipe
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            process.quiet_stdout()
            sys.exit(141)
        sys.exit(code if isinstance(code, int) else 0)


def _error(message: str) -> None:
    from gradlab.report.console import error_line  # rich: only when there is an error to print

    error_line(message)


@click.group(cls=GradlabGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, "--version", prog_name="gradlab", message="%(prog)s %(version)s")
def cli() -> None:
    """gradlab: learn how gradients really work.

    Each lesson reproduces a classic TensorFlow-1 gradient tutorial in PyTorch and proves its teaching point
    with claims checked at run time. Start with `gradlab mnist`; every lesson runs offline on bundled data.
    """


def lesson_command(info: LessonInfo) -> LessonCommand:
    """The subcommand of a lesson: its options are its Config's fields and the run options (gradlab.kit.options)."""
    def callback(**_: Any) -> int:  # the values are read from the context, with where each came from
        return run_lesson(click.get_current_context(), info.name)

    return LessonCommand(info.name, params=click_params(info.specs), callback=callback, help=info.help,
                         short_help=info.short_help)


for _info in LESSONS.values():
    cli.add_command(lesson_command(_info))


def run_lesson(ctx: click.Context, name: str) -> int:
    """Typed options → run options and Config (bad values fail there, before anything is printed or run) → run →
    render/write. Returns the exit code (0 claims hold, 1 a claim failed)."""
    from gradlab.report import console as report  # rich: when a lesson runs

    typed = {k: v for k, v in ctx.params.items() if ctx.get_parameter_source(k) == ParameterSource.COMMANDLINE}
    run, config = runner.resolve(name, typed)
    with process.stop_signals_held():  # a Ctrl-C while torch loads would be swallowed by it: see stop_signals_held
        import torch  # noqa: F401
    to_stdout = STDOUT in (run.json_path, run.plot_path)
    console = report.make_console(quiet=run.quiet, stderr=to_stdout)  # stdout then carries the file alone
    if run.explain:
        from gradlab.report.explain import print_explanation  # rich: only when asked for

        print_explanation(name, console, full=run.explain == "full")
    with report.progress_bar(console) as progress:
        result = runner.execute(name, run, config, console, progress)
    report.render(result, console)
    write_outputs(result, run, console)
    if run.graph_path:  # asked for by name, so drawn even with --quiet (as --json - is written)
        from gradlab.report.graph import write_lesson_graph  # torch

        write_lesson_graph(run.graph_path, LESSONS[name].load(), config,
                           report.make_console(quiet=run.quiet and run.graph_path != STDOUT, stderr=to_stdout))
    return result.exit_code


def write_outputs(result, run, console) -> None:
    """--json and --plot (RUN, the run options), each said in a line unless it went to standard output."""
    for path, write in ((run.json_path, write_json), (run.plot_path, write_plot)):
        if path:
            write(path, result)
            if path != STDOUT:
                console.print(f"wrote {path}", markup=False)


for _command in (classroom.list_lessons, classroom.all_lessons, classroom.report, student.exercises,
                 student.exercise, student.check_cmd, student.grade, classroom.notebooks, classroom.show, step.step,
                 step.graph, docs_site.docs):  # after the lessons: `gradlab --help` lists them in this order
    cli.add_command(_command)


def main() -> None:
    heap.own_process()  # this process is gradlab's: its collector is set for torch's (gradlab.kit.heap)
    cli()
