"""`gradlab step LESSON` and `gradlab graph LESSON`: the commands, their flags and how step asks on a terminal; the
walk itself is gradlab.report.step and the drawing gradlab.report.graph, imported (with torch and rich) when a
command runs."""

from __future__ import annotations

import sys

import click

from gradlab.lessons import LESSONS
from gradlab.report.files import STDOUT, check_graph_suffix, check_writable


@click.command("step", short_help="Walk a lesson's backward pass node by node; stops where a NaN or inf is born.")
@click.argument("lesson", type=click.Choice(list(LESSONS)))
@click.option("--predict", is_flag=True,
              help="On a terminal: guess each one-number gradient before its local derivative is shown; the guesses "
                   "are scored.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True, help="Random seed.")
def step(lesson: str, predict: bool, seed: int) -> int:
    """Walk LESSON's backward pass (its key computation, on a tiny input) one node at a time in the order autograd
    runs it: the gradient arriving, the local derivative, the gradient sent on. It stops at the first non-finite
    gradient and says why, and says where the lesson's point is (the cut, the clipping, the all-reduce). On a
    terminal it waits after each node: Enter goes on, s skips to the lesson's point, q quits; piped, it prints
    every step."""
    from gradlab.report import step as walk  # torch and rich: when the command runs

    on_terminal = sys.stdin.isatty() and sys.stdout.isatty()
    return walk.walk_lesson(lesson, seed=seed, predict=predict, prompt=_ask if on_terminal else None)


def _ask(text: str) -> str:
    """The line typed after TEXT on the terminal (Enter alone: "")."""
    return click.prompt(text, default="", show_default=False, prompt_suffix="")


@click.command("graph", short_help="Draw a lesson's backward pass, measured, without running the lesson (seconds).")
@click.argument("lesson", type=click.Choice(list(LESSONS)))
@click.option("--out", "out", default=STDOUT, show_default=True, metavar="FILE",
              help="Where: FILE.html (a page you click through: each node's chain rule), FILE.svg, or - (a tree on "
                   "the terminal).")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True, help="Random seed.")
def graph(lesson: str, out: str, seed: int) -> int:
    """Draw LESSON's backward graph on its small inputs, as `gradlab LESSON --graph FILE` does after a run, but
    without the run: every node's gradient measured by autograd's hooks, the lesson's point marked (the cut, the
    clipping, the all-reduce, where a NaN is born)."""
    check_graph_suffix(out, "--out")
    check_writable(out, "--out")
    from gradlab.report import console as report  # torch and rich: when the command runs
    from gradlab.report.graph import write_lesson_graph

    info = LESSONS[lesson]
    write_lesson_graph(out, info.load(), info.config(seed=seed), report.make_console(quiet=False, stderr=False))
    return 0
