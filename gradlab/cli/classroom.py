"""The classroom commands: `gradlab list`, `all`, `report`, `notebooks` and `show`. Registered on the `gradlab` group
by cli/main.py; like it, they import torch, rich and the lessons only when they run."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import click

from gradlab import assets, runner
from gradlab.errors import GradlabError, shorten
from gradlab.kit.result import Column, Table, load_result
from gradlab.kit.threads import validate
from gradlab.lessons import LESSONS, measured_runtimes
from gradlab.report import files
from gradlab.version import __version__


@click.command("list", short_help="Every lesson: the tutorial idea, its main options, how long it takes.")
def list_lessons() -> int:
    """Every lesson with the TF-1 tutorial idea it reproduces, its main options, and its measured run times."""
    from rich.text import Text  # rich: when the command runs

    from gradlab.report.console import FittedTable, make_console

    measured = measured_runtimes()
    times = measured.get("lessons", {})
    title = "gradlab lessons" + (f" — run times measured on {measured['cpus']} CPUs on {measured['measured']} "
                                 f"(`make runtimes`; start-up included)" if measured else "")
    rows = []
    for info in LESSONS.values():
        t = times.get(info.name, {})
        what = Text(info.idea)
        what.append(f"\n{info.options}", style="dim")
        rows.append([Text(f"gradlab {info.name}", no_wrap=True), what,
                     Text(f"{t['default_s']:.0f} s / {t['quick_s']:.0f} s" if t else "?", no_wrap=True)])
    console = make_console()
    console.print(FittedTable(title, ["lesson", "the tutorial idea it reproduces; main options", "default / --quick"],
                              rows, [False, False, True], show_lines=True))
    console.print(f"presets (--config NAME): {', '.join(assets.presets())}. Notebooks: `gradlab notebooks DIR`.")
    return 0


def _lesson_names(text: str | None) -> list[str]:
    if not text:
        return list(LESSONS)
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise GradlabError(f"--lessons {text!r} names no lesson; give e.g. --lessons mnist,clip (or leave it out)")
    unknown = [n for n in names if n not in LESSONS]
    if unknown:
        raise GradlabError(f"--lessons: unknown lesson {unknown[0]!r}; choose from {', '.join(LESSONS)}")
    return names


def run_many(names: list[str], quick: bool, console, threads: int | None = None) -> list[tuple[str, Any, float]]:
    """Run each lesson with its quick or full budget, rendering each result; return (name, result, wall s)."""
    from gradlab.report import console as report  # rich: when the command runs

    validate(threads)
    done = []
    for name in names:
        run, config = runner.resolve(name, {"threads": threads} if threads else {}, budget="quick" if quick else "full")
        start = time.perf_counter()
        with report.progress_bar(console) as progress:
            result = runner.execute(name, run, config, console, progress)
        done.append((name, result, time.perf_counter() - start))
        report.render(result, console)
    return done


def _summary_rows(done) -> list[list[Any]]:
    return [[name, sum(c.passed for c in r.claims), sum(not c.passed for c in r.claims)
             + (1 if r.stopped else 0), wall] for name, r, wall in done]


@click.command("all", short_help="Run every lesson in turn and summarise the claims (exit 1 if any fails).")
@click.option("--quick", is_flag=True, help="Small budgets and the bundled data; every claim is still checked.")
@click.option("--lessons", default=None, help="Comma-separated subset, e.g. mnist,clip (default: all).")
@click.option("--threads", type=int, default=None, help="CPU threads for every lesson (default: 1).")
@click.option("--quiet", is_flag=True, help="Print only the summary.")
def all_lessons(quick: bool, lessons: str | None, threads: int | None, quiet: bool) -> int:
    """Run every lesson (with --quick in about a minute on 2 CPU cores) and print a summary table."""
    from gradlab.report import console as report  # rich: when the command runs

    names = _lesson_names(lessons)
    done = run_many(names, quick, report.make_console(quiet=quiet), threads)
    rows = _summary_rows(done)
    console = report.make_console()
    console.print(report.render_table(Table("gradlab all" + (" --quick" if quick else ""),
                                            [Column(header="lesson"), Column(header="claims passed"),
                                             Column(header="claims failed"), Column(header="wall s", format=".1f")],
                                            rows)))
    ok, verdict = _verdict(done, rows)
    console.print(verdict, style="bold green" if ok else "bold red", markup=False)
    return 0 if ok else 1


def _verdict(done, rows) -> tuple[bool, str]:
    """(all hold?, one line): how many claims hold, or which failed (lesson: claim id; a stopped run counts)."""
    failed = [f"{name}: {c.id}" for name, r, _ in done for c in r.claims if not c.passed]
    failed += [f"{name}: stopped" for name, r, _ in done if r.stopped]
    if failed:
        return False, f"{len(failed)} claims failed: " + ", ".join(failed)
    return True, f"all {sum(row[1] for row in rows)} claims hold in {len(rows)} lesson{'s' * (len(rows) != 1)}"


@click.command(short_help="Run every lesson and write one self-contained HTML page plus every lesson's JSON.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, help="Folder for index.html.")
@click.option("--quick", is_flag=True, help="The same quick runs as `gradlab all --quick`.")
@click.option("--lessons", default=None, help="Comma-separated subset (default: all).")
@click.option("--threads", type=int, default=None, help="CPU threads for every lesson (default: 1).")
@click.option("--quiet", is_flag=True, help="Print only where the report went.")
def report(out_dir: str, quick: bool, lessons: str | None, threads: int | None, quiet: bool) -> int:
    """Write OUT/index.html (tables, claims, explanations, plots embedded) and OUT/<lesson>.json.

    Nothing is written until every lesson has run; each file is written atomically.
    """
    import torch  # torch and rich: when the command runs

    from gradlab.report import console as report
    from gradlab.report import html as html_report

    out = _report_folder(out_dir)  # everything about --out is checked before any lesson runs
    names = _lesson_names(lessons)
    done = run_many(names, quick, report.make_console(quiet=quiet), threads)
    sections, contents = [], {}
    for name, result, wall in done:
        data = result.to_json()
        graph = _graph_svg(name, quick, threads)
        sections.append(html_report.result_section(result, wall, data, graph))
        contents[f"{name}.json"] = (json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode()
    title = "gradlab report" + (" (quick)" if quick else "")
    summary = _summary_rows(done)
    command = "gradlab report --out " + out_dir + (" --quick" if quick else "") + \
        (f" --lessons {lessons}" if lessons else "") + (f" --threads {threads}" if threads else "")
    ok, verdict = _verdict(done, summary)
    made = {"command": command, "gradlab": __version__, "torch": torch.__version__,
            "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "verdict": verdict}
    contents["index.html"] = html_report.page(sections, summary, title, made, ok).encode()
    _write_report(out, out_dir, contents)
    console = report.make_console()
    console.print(verdict, style="bold green" if ok else "bold red", markup=False)
    console.print(f"wrote {out / 'index.html'} and {len(done)} JSON files", markup=False)
    return 0 if ok else 1


def _report_folder(out_dir: str) -> Path:
    """--out as a folder the report can be written into (created later, when every lesson has run)."""
    out = Path(out_dir)
    try:
        if out.is_symlink() and not out.exists():
            raise GradlabError(f"--out {out_dir} is a symlink to {os.readlink(out)}, which does not exist; create "
                               f"that folder or give another --out")
        if out.exists() and not out.is_dir():
            raise GradlabError(f"--out {out_dir} is a file; give a folder for the report")
        if not out.parent.is_dir():
            raise GradlabError(f"--out {out_dir}: folder {out.parent} does not exist; create it first")
        files.check_writable(str(out / "index.html") if out.is_dir() else out_dir, "--out")
    except OSError as e:  # a name too long for the file system, say
        raise GradlabError(f"--out {shorten(out_dir)}: {e.strerror or e}; choose another folder") from None
    return out


def _write_report(out: Path, out_dir: str, contents: dict[str, bytes]) -> None:
    """Every file of the report into OUT, or none: a folder this made is removed again when a write fails."""
    created = not out.exists()
    try:
        out.mkdir(exist_ok=True)
    except OSError as e:
        raise GradlabError(f"--out {out_dir}: cannot create the folder ({e.strerror}); choose another path") from None
    try:
        for fname, content in contents.items():
            files.write_bytes(out / fname, content)
    except GradlabError:
        if created:  # leave nothing behind, not a folder with half the report
            shutil.rmtree(out, ignore_errors=True)
        raise


def _graph_svg(name: str, quick: bool, threads: int | None) -> str:
    """Lesson NAME's backward graph at the settings run_many ran it with, drawn as an SVG (gradlab.report.graph_svg)."""
    from gradlab.report.graph_svg import svg  # torch

    _, config = runner.resolve(name, {"threads": threads} if threads else {}, budget="quick" if quick else "full")
    return svg(LESSONS[name].load().graphs(config), inline=True)


@click.command(short_help="Copy the lesson notebooks (one per lesson, for Jupyter or Colab) into a folder.")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--source", default=None,
              help="What each notebook's first cell pip-installs where gradlab is missing (Colab): a wheel's URL, or "
                   "git+https://…; default: the upload of a gradlab wheel beside the notebook.")
@click.option("--force", is_flag=True, help="Replace notebooks that are already in FOLDER.")
def notebooks(folder: str, source: str | None, force: bool) -> int:
    """Write the eight lesson notebooks into FOLDER (created if needed), ready to open in JupyterLab
    (`jupyter lab FOLDER`, with `pip install 'gradlab-teach[notebooks]'`) or to upload to Colab."""
    found = assets.notebooks()
    if not found:
        raise GradlabError("the notebooks are missing from this installation; reinstall gradlab")
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise GradlabError(f"{folder} is a file; give a folder for the notebooks")
    there = [p.name for p in found if (out / p.name).exists()]
    if there and not force:
        raise GradlabError(f"{folder} already has {', '.join(there)}; add --force to replace them, or choose another "
                           f"folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise GradlabError(f"cannot create {folder} ({e.strerror}); choose another folder") from None
    for path in found:
        nb = json.loads(path.read_text(encoding="utf-8"))
        if source is not None:
            nb["cells"][1]["source"] = set_source("".join(nb["cells"][1]["source"]), source)
        files.write_bytes(out / path.name, (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode())
    click.echo(f"wrote {len(found)} notebooks to {folder}: open them with `jupyter lab {folder}` (JupyterLab is the "
               f"extra: pip install 'gradlab-teach[notebooks]'), or upload one to Colab (File > Upload notebook)")
    return 0


SOURCE_LINE = 'SOURCE = ""'


def set_source(cell: str, source: str) -> str:
    """The install cell with SOURCE set: what pip installs where gradlab is missing."""
    if SOURCE_LINE not in cell:
        raise GradlabError("the notebooks' install cell has no SOURCE line; reinstall gradlab")
    return cell.replace(SOURCE_LINE, f"SOURCE = {json.dumps(source)}", 1)


@click.command(short_help="Print the tables and claims of a saved --json result again.")
@click.argument("path", type=click.Path(dir_okay=False))
def show(path: str) -> int:
    """Re-render a result saved with --json (or by gradlab report): the same tables and claims."""
    from gradlab.report import console as report  # rich: when the command runs

    data = load_result(path)
    report.render(data, report.make_console())
    return 0 if all(c["passed"] for c in data["claims"]) and not data.get("stopped") else 1

