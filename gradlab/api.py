"""gradlab as a Python library, for notebooks, Colab and scripts:

    import gradlab
    gradlab.lessons()                                   # every lesson: name, the tutorial idea, main options
    r = gradlab.run("mnist", epochs=3, dataset="mnist-sample")
    r                                                   # in Jupyter: the tables, claims and plot (the HTML report)
    r.exit_code, r.claims, r.curves["epoch cost"].x     # the same Result the command line renders

The keyword arguments are the command line's options (`--batch-size 50` is batch_size=50; `--manual-grad` is
variant="manual", the name the flag sets), declared once by the lesson (gradlab.settings), checked the same way, and
bad input raises GradlabError with the same one-line message. Nothing is printed; torch is imported when a lesson
runs, not by `import gradlab`.
"""

from __future__ import annotations

import difflib
from typing import Any

from gradlab import settings as opts
from gradlab.errors import GradlabError, check
from gradlab.lessons import LESSONS, index


def lessons() -> list[dict[str, str]]:
    """Every lesson in teaching order: {"name", "idea", "options"} (the same index as `gradlab list`)."""
    return index()


def options(lesson: str) -> dict[str, Any]:
    """The keyword arguments run(LESSON, ...) accepts, with their defaults."""
    from gradlab import runner

    defaults = runner.defaults(_known(lesson))
    return {s.name: defaults[s.name] for s in _api_specs(lesson)}


def run(lesson: str, *, progress: bool = False, **kwargs: Any):
    """Run LESSON with KWARGS (the command line's options); return its Result. PROGRESS: show a progress bar."""
    import click

    from gradlab import runner
    from gradlab.config import cast_value, example
    from gradlab.report import html  # noqa: F401 — registers how Jupyter draws the Result

    params = runner.defaults(_known(lesson))  # every option at the command line's default
    known = {s.name: p for s in _api_specs(lesson)
             for p in opts.click_params([s])[:1]}  # flags that share a name (variant) appear once
    ctx = click.Context(click.Command(lesson))
    for key, value in kwargs.items():
        if key not in known:
            close = difflib.get_close_matches(key, known, 1)
            raise GradlabError(f"gradlab.run({lesson!r}): unknown option {key}={value!r}"
                               + (f"; did you mean {close[0]}=?" if close else "")
                               + f" (options: {', '.join(known)})")
        param = known[key]
        if value is None and param.default is None:  # e.g. threads=None: the default policy
            params[key] = None
            continue
        params[key] = cast_value(ctx, param, value, f"gradlab.run({lesson!r})", key, repr(value),
                                 lambda kind, key=key: f"{key}={example(kind, python=True)}")
    if params.get("quick"):  # the quick budget replaces defaults only: keyword arguments given win
        params.update({k: v for k, v in runner.quick_values(lesson).items() if k not in kwargs})
    config = runner.make_config(lesson, params)  # the lesson's own checks, as on the command line
    if not progress:
        return runner.execute(lesson, params, None, config=config)
    from gradlab.report import console as report

    with report.progress_bar(report.make_console()) as bar:
        return runner.execute(lesson, params, None, bar, config)


def _known(lesson: str) -> str:
    check(isinstance(lesson, str) and lesson in LESSONS,
          f"unknown lesson {lesson!r}: choose from {', '.join(LESSONS)} (gradlab.lessons() lists them)")
    return lesson


def _api_specs(lesson: str) -> list[opts.Spec]:
    return [s for s in LESSONS[lesson].specs if s.opt.in_api]
