"""gradlab as a Python library, for notebooks, Colab and scripts:

    import gradlab
    gradlab.list_lessons()                              # every lesson: name, the tutorial idea, main options
    r = gradlab.run("mnist", epochs=3, dataset="mnist-sample")
    r                                                   # in Jupyter: the tables, claims and plot (the HTML report)
    r.exit_code, r.claims, r.curves["epoch cost"].x     # the same Result the command line renders

The keyword arguments are the command line's options (`--batch-size 50` is batch_size=50; `--manual-grad` is
variant="manual", the name the flag sets), declared once by the lesson (gradlab.kit.options). They take the same
path to the run as the command line's flags (gradlab.runner.resolve), and bad input raises GradlabError with the same
one-line message, in Python's terms (lr=, not --lr). Nothing is printed; torch is imported when a lesson runs, not
by `import gradlab` (nor rich, nor the grader: they load when first used).
"""

from __future__ import annotations

from typing import Any

from gradlab import runner
from gradlab.errors import OptionError
from gradlab.errors import check as _check
from gradlab.kit import heap
from gradlab.lessons import LESSONS, index


def list_lessons() -> list[dict[str, str]]:
    """Every lesson in teaching order: {"name", "idea", "options"} (the same index as `gradlab list`)."""
    return index()


def options(lesson: str) -> dict[str, Any]:
    """The keyword arguments run(LESSON, ...) accepts, with their defaults."""
    defaults = runner.defaults(_known(lesson))
    return {s.name: defaults[s.name] for s in LESSONS[lesson].specs if s.opt.in_api}


def run(lesson: str, *, progress: bool = False, **kwargs: Any):
    """Run LESSON with KWARGS (the command line's options as keyword arguments) and return its Result, which
    Jupyter displays as tables, claims and plots. PROGRESS: show a progress bar. Bad input raises
    gradlab.errors.GradlabError."""
    from gradlab.report.html import for_notebook  # rich; the Result as Jupyter draws it

    run_options, config = runner.resolve(_known(lesson), kwargs, python=True)  # checked as on the command line
    try:
        with heap.lent():  # the caller's collector, lent for the run (gradlab.kit.heap)
            if not progress:
                return for_notebook(runner.execute(lesson, run_options, config))
            from gradlab.report import console as report

            with report.progress_bar(report.make_console()) as bar:
                return for_notebook(runner.execute(lesson, run_options, config, None, bar))
    except OptionError as e:  # found while running (no such device, the port taken): in keywords, as resolve() words
        raise e.in_python(f"gradlab.run({lesson!r})") from None


def _known(lesson: str) -> str:
    _check(isinstance(lesson, str) and lesson in LESSONS,
           f"unknown lesson {lesson!r}: choose from {', '.join(LESSONS)} (gradlab.list_lessons() lists them)")
    return lesson


def graph(tensor, *, names: dict[str, Any] | None = None, title: str = "", forbidden: tuple[str, ...] = ()):
    """TENSOR's backward graph, measured: torch.autograd.grad through it with a hook on every node (no .grad is
    changed; the graph is kept). NAMES groups the leaves ({"net": module, "x": tensor}); a group in FORBIDDEN that
    receives a gradient has its path drawn in red. Jupyter shows what it returns as the drawing."""
    import torch

    from gradlab.kit import autograd_graph
    from gradlab.report.graph import GraphView

    _check(isinstance(tensor, torch.Tensor) and tensor.grad_fn is not None,
           "gradlab.graph(tensor): give a tensor computed from one that requires grad (this one has no grad_fn)")
    return GraphView([autograd_graph.trace(tensor, title=title or "the backward graph", names=names,
                                           forbidden=forbidden)])


def record():
    """`with gradlab.record(): y = f(x)`: keep each node's values, source line and cuts for gradlab.graph(y)."""
    from gradlab.kit import autograd_graph

    return autograd_graph.record()


def list_exercises() -> list[dict]:
    """Every exercise: {"name", "lesson", "function", "level", "what"} (as `gradlab exercises`)."""
    from gradlab.practice import listing  # the grader loads when first used

    return listing()


def check(fn, exercise: str):
    """Check FN (a function or class you wrote, e.g. in a notebook cell) against exercise EXERCISE, as `gradlab
    check` does; return the Result, which Jupyter shows as the table of checks with the diagnosis."""
    from gradlab.practice.classroom.notebook import check_function  # the grader loads when first used

    with heap.lent():  # the caller's collector, lent for the check (gradlab.kit.heap)
        return check_function(fn, exercise)
