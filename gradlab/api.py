"""gradlab as a Python library, for notebooks, Colab and scripts:

    import gradlab
    gradlab.lessons()                                   # every lesson: name, the tutorial idea, main options
    r = gradlab.run("mnist", epochs=3, dataset="mnist-sample")
    r                                                   # in Jupyter: the tables, claims and plot (the HTML report)
    r.exit_code, r.claims, r.curves["epoch cost"].x     # the same Result the command line renders

The keyword arguments are the command line's options (`--batch-size 50` is batch_size=50; `--manual-grad` is
variant="manual", the name the flag sets), checked the same way, and bad input raises GradlabError with the same
one-line message. Nothing is printed; torch is imported when a lesson runs, not by `import gradlab`.
"""

from __future__ import annotations

import difflib
from typing import Any

from gradlab.errors import GradlabError, check

# Options about files and printing: a notebook has the Result itself (r.to_json(), gradlab.report.files).
NOT_IN_API = {"config", "json_path", "plot_path", "quiet", "explain"}
PY_EXAMPLES = {"a whole number": "10", "a number": "0.01", "true or false": "True", "text": '"…"'}


def lessons() -> list[dict[str, str]]:
    """Every lesson in teaching order: {"name", "idea", "options"} (the same index as `gradlab list`)."""
    import gradlab.lessons

    return gradlab.lessons()  # the index answers the call itself (see gradlab/lessons/__init__.py)


def options(lesson: str) -> dict[str, Any]:
    """The keyword arguments run(LESSON, ...) accepts, with their defaults."""
    command, ctx = _command(lesson)
    return {p.name: ctx.params[p.name] for p in _api_options(command).values()}


def run(lesson: str, *, progress: bool = False, **kwargs: Any):
    """Run LESSON with KWARGS (the command line's options); return its Result. PROGRESS: show a progress bar."""
    from gradlab import runner
    from gradlab.config import cast_value

    command, ctx = _command(lesson)
    params = dict(ctx.params)  # every option at the command line's default
    known = _api_options(command)
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
                                 lambda kind, key=key: f"{key}={PY_EXAMPLES[kind]}")
    if params.get("quick"):  # the quick budget replaces defaults only: keyword arguments given win
        from gradlab.cli import quick_values

        params.update({k: v for k, v in quick_values(lesson).items() if k not in kwargs})
    config = runner.make_config(lesson, params)  # the lesson's own checks, as on the command line
    if not progress:
        return runner.execute(lesson, params, None, config=config)
    from gradlab.report import console as report

    with report.progress_bar(report.make_console()) as bar:
        return runner.execute(lesson, params, None, bar, config)


def _command(lesson: str):
    from gradlab.cli import cli
    from gradlab.lessons import LESSONS

    check(isinstance(lesson, str) and lesson in LESSONS,
          f"unknown lesson {lesson!r}: choose from {', '.join(LESSONS)} (gradlab.lessons() lists them)")
    command = cli.commands[lesson]
    return command, command.make_context(lesson, [])


def _api_options(command) -> dict:
    import click

    out = {}
    for p in command.params:  # flags that share a name (--optimizer/--manual-grad: variant) appear once
        if isinstance(p, click.Option) and p.name not in NOT_IN_API:
            out.setdefault(p.name, p)
    return out
