"""The practice commands: `gradlab exercises`, `exercise` and `check`. Registered on the `gradlab` group by
cli.py; the checking itself is gradlab.practice.check (each submission runs in a process of its own)."""

from __future__ import annotations

import json

import click

from gradlab.errors import GradlabError
from gradlab.version import __version__


def installed_torch() -> str:
    """torch.__version__, without importing torch when nothing has (a check stopped by its pre-flight): read from
    torch/version.py, which is what torch.__version__ is."""
    import importlib.util
    import re
    import sys
    from pathlib import Path

    if "torch" in sys.modules:
        return sys.modules["torch"].__version__
    spec = importlib.util.find_spec("torch")
    text = Path(spec.submodule_search_locations[0], "version.py").read_text() if spec else ""
    found = re.search(r"^__version__ = '([^']+)'", text, re.M)
    return found[1] if found else "unknown"


@click.command(short_help="The exercises: the gradient code a student writes, checked by `gradlab check`.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write the list as JSON objects (name, lesson, function, level, what) to this file (- for stdout).")
def exercises(json_path: str | None) -> int:
    """Every exercise: its lesson, its name, what to write, its level. `gradlab exercise NAME` writes a starter."""
    from rich.text import Text

    from gradlab.practice import listing
    from gradlab.report.console import FittedTable, make_console
    from gradlab.report.files import check_writable, write_bytes

    items = listing()
    if json_path:
        check_writable(json_path, "--json")
        write_bytes(json_path, (json.dumps(items, indent=2, ensure_ascii=False) + "\n").encode())
        return 0
    rows = [[Text(i["lesson"], no_wrap=True), Text(i["name"], no_wrap=True), Text(i["what"]),
             Text(str(i["level"]), no_wrap=True)] for i in items]
    make_console().print(FittedTable("gradlab exercises — write one with `gradlab exercise NAME`, check it with "
                                     "`gradlab check FILE`", ["lesson", "exercise", "what to write", "level"], rows,
                                     [False, False, False, True]))
    return 0


@click.command(short_help="Write an exercise's starter file (signature, math, shapes, the check command).")
@click.argument("name")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None,
              help="The file to write (default: FUNCTION.py in the current folder).")
@click.option("--force", is_flag=True, help="Replace the file if it exists.")
def exercise(name: str, out_path: str | None, force: bool) -> int:
    """Write the starter file of exercise NAME: the function to write, its math and shapes, the TF-1 line it
    replaces, a body that raises NotImplementedError, and the command that checks it."""
    import os

    from gradlab.practice import EXERCISES
    from gradlab.practice.check import starter
    from gradlab.report.files import check_writable, write_bytes

    if name not in EXERCISES:
        import difflib

        close = difflib.get_close_matches(name, EXERCISES, 1)
        raise GradlabError(f"unknown exercise {name!r}" + (f"; did you mean {close[0]}?" if close else "")
                           + " (gradlab exercises lists them)")
    ex = EXERCISES[name]
    out = out_path or f"{ex.function}.py"
    if os.path.lexists(out) and not force:
        raise GradlabError(f"{out} already exists; add --force to replace it, or --out another file")
    check_writable(out, "--out")
    write_bytes(out, starter(ex).encode())
    click.echo(f"wrote {out}: write {ex.function}(), then run `gradlab check {out}`")
    return 0


@click.command("check", short_help="Grade a solution with the lesson's own claims, and diagnose a wrong one.")
@click.argument("path", type=click.Path())
@click.option("--exercise", "exercise_name", default=None, help="The exercise (default: the one the file names).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write the result (checks, claims, diagnosis, points) to this file (- for standard output).")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), default=None,
              help="Write JUnit XML (GitHub Classroom, CI): one test case per check.")
@click.option("--gradescope", "gradescope_path", type=click.Path(dir_okay=False), default=None,
              help="Write Gradescope's autograder results.json: one test per check, one point each.")
@click.option("--quiet", is_flag=True, help="Print nothing; use the exit code (and the files).")
def check_cmd(path: str, exercise_name: str | None, json_path: str | None, junit_path: str | None,
              gradescope_path: str | None, quiet: bool) -> int:
    """Run PATH's function in a separate process (time and memory limits) on generated inputs, edge cases
    included, compare it with the reference computed here, run the lesson's claims on its outputs, and name the
    mistake when a wrong answer matches a known one. Exit 0 when every check passes, 1 when one fails.

    PATH may be a folder of submissions (the *.py files in it): each is checked, then one summary table says who
    passed what (the files --json, --junit and --gradescope then cover them all)."""
    from pathlib import Path

    from gradlab.practice import grading
    from gradlab.practice.check import exercise_of, run_check
    from gradlab.report import console as report
    from gradlab.report.files import STDOUT, check_writable, write_bytes

    folder = Path(path).is_dir()
    files = sorted(str(p) for p in Path(path).glob("*.py")) if folder else [path]
    if folder and not files:
        raise GradlabError(f"{path} has no .py files to check")
    todo = [(f, exercise_of(f, exercise_name)) for f in files]  # every file names its exercise, before any runs
    for target, option in ((json_path, "--json"), (junit_path, "--junit"), (gradescope_path, "--gradescope")):
        check_writable(target, option)
    console = report.make_console(quiet=quiet, stderr=STDOUT in (json_path, junit_path, gradescope_path))
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:  # a class's folder: two submissions at a time, each in its own process
        checked = list(pool.map(lambda item: run_check(*item), todo))
    # torch is not imported before the checks: each starts its submission's process first, so that both processes
    # import torch at the same time (and a syntax error is reported without importing it at all)
    torch_version = installed_torch()
    results = []
    for result in checked:
        result.torch, result.version, result.device = torch_version, __version__, "cpu"
        result.threads, result.threads_why = 1, "the submission runs on one thread"
        checks = grading.points(result)
        result.metrics["points"] = {"score": sum(t["score"] for t in checks), "max_score": len(checks)}
        results.append(result)
        if not folder:
            report.render(result, console)
            if result.metrics.get("trace"):
                console.print("your traceback (the frames of your own file):", style="dim")
                console.print(result.metrics["trace"], markup=False, highlight=False)
    if folder:
        from gradlab.result import Table

        rows = [[Path(r.config["file"]).name, r.metrics["exercise"], r.metrics["points"]["score"],
                 r.metrics["points"]["max_score"], "passed" if r.exit_code == 0 else
                 (r.stopped or r.metrics.get("diagnosis", "a check failed"))] for r in results]
        console.print(report.render_table(Table(f"gradlab check {path}: {sum(r.exit_code == 0 for r in results)} "
                                                f"of {len(results)} submissions pass",
                                                ["file", "exercise", "points", "of", "verdict"], rows)))
    data = [r.to_json() | {"points": r.metrics["points"]} for r in results]
    outputs = ((json_path, lambda: json.dumps(data[0] if not folder else data, indent=2, ensure_ascii=False) + "\n"),
               (junit_path, lambda: grading.junit(results)), (gradescope_path, lambda: grading.gradescope(results)))
    for target, text in outputs:
        if target:
            write_bytes(target, text().encode())
            if target != STDOUT:
                console.print(f"wrote {target}", markup=False)
    return 0 if all(r.exit_code == 0 for r in results) else 1

