"""gradlab as a Python library, for notebooks, Colab and scripts:

    import gradlab
    gradlab.lessons()                                   # every lesson: name, the tutorial idea, main options
    r = gradlab.run("mnist", epochs=3, dataset="mnist-sample")
    r                                                   # in Jupyter: the tables, claims and plot (the HTML report)
    r.exit_code, r.claims, r.curves["epoch cost"].x     # the same Result the command line renders

The keyword arguments are the command line's options (`--batch-size 50` is batch_size=50; `--manual-grad` is
variant="manual", the name the flag sets), declared once by the lesson (gradlab.kit.options). They take the same
path to the run as the command line's flags (gradlab.runner.resolve), and bad input raises GradlabError with the same
one-line message. Nothing is printed; torch is imported when a lesson runs, not by `import gradlab`.
"""

from __future__ import annotations

from typing import Any

from gradlab.errors import check
from gradlab.lessons import LESSONS, index


def lessons() -> list[dict[str, str]]:
    """Every lesson in teaching order: {"name", "idea", "options"} (the same index as `gradlab list`)."""
    return index()


def options(lesson: str) -> dict[str, Any]:
    """The keyword arguments run(LESSON, ...) accepts, with their defaults."""
    from gradlab import runner

    defaults = runner.defaults(_known(lesson))
    return {s.name: defaults[s.name] for s in LESSONS[lesson].specs if s.opt.in_api}


def run(lesson: str, *, progress: bool = False, **kwargs: Any):
    """Run LESSON with KWARGS (the command line's options); return its Result. PROGRESS: show a progress bar."""
    from gradlab import runner
    from gradlab.report import html  # noqa: F401 — registers how Jupyter draws the Result

    options, config = runner.resolve(_known(lesson), kwargs, python=True)  # checked as on the command line
    if not progress:
        return runner.execute(lesson, options, config)
    from gradlab.report import console as report

    with report.progress_bar(report.make_console()) as bar:
        return runner.execute(lesson, options, config, None, bar)


def _known(lesson: str) -> str:
    check(isinstance(lesson, str) and lesson in LESSONS,
          f"unknown lesson {lesson!r}: choose from {', '.join(LESSONS)} (gradlab.lessons() lists them)")
    return lesson


def graph(tensor, *, names: dict[str, Any] | None = None, title: str = "", forbidden: tuple[str, ...] = ()):
    """TENSOR's backward graph, measured: torch.autograd.grad through it with a hook on every node (no .grad is
    changed; the graph is kept). NAMES groups the leaves ({"net": module, "x": tensor}); a group in FORBIDDEN that
    receives a gradient has its path drawn in red. Jupyter shows what it returns as the drawing."""
    import torch

    from gradlab.kit import autograd_graph
    from gradlab.report.graph import GraphView

    check(isinstance(tensor, torch.Tensor) and tensor.grad_fn is not None,
          "gradlab.graph(tensor): give a tensor computed from one that requires grad (this one has no grad_fn)")
    return GraphView([autograd_graph.trace(tensor, title=title or "the backward graph", names=names,
                                           forbidden=forbidden)])


def record():
    """`with gradlab.record(): y = f(x)`: keep each node's values, source line and cuts for gradlab.graph(y)."""
    from gradlab.kit import autograd_graph

    return autograd_graph.record()
