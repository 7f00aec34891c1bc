"""The one path from what a user gave to a run, and the run. Every front end calls resolve(): the command line
(cli.py), `gradlab all` and `report` (classroom.py) and gradlab.run (api.py); then execute().

resolve() lays four layers, each over the one before, and returns the run options and the lesson's Config:

    1. each option's default (or its environment variable: GRADLAB_DATA for --data-dir)
    2. a budget: the quick one (--quick, quick=True, `gradlab all --quick`) or the full one (`gradlab all`), values
       kept in the lesson's LessonInfo
    3. a preset: --config NAME or --config FILE.toml (gradlab.presets)
    4. what the user gave: the flags typed, gradlab.run's keyword arguments, `gradlab all --threads`

An option from layer 4 (or from its environment variable) is never replaced by a budget or a preset.

execute() runs it: Config → threads → device → data → run → Result. torch is imported there, never at start-up.
"""

from __future__ import annotations

import dataclasses
import difflib
import time
from pathlib import Path
from typing import Any

from gradlab.errors import GradlabError
from gradlab.kit import options
from gradlab.kit.options import LessonConfig, RunOptions
from gradlab.lessons import LESSONS, LessonInfo
from gradlab.version import __version__


def resolve(name: str, given: dict[str, Any] | None = None, *, python: bool = False,
            budget: str | None = None) -> tuple[RunOptions, LessonConfig]:
    """Lesson NAME's run options and Config from what the user GAVE (option name → value), checked before anything
    runs: bad input raises GradlabError with one line that says the fix.

    GIVEN: values click already parsed (the flags typed, `gradlab all --threads`) or, with PYTHON, gradlab.run's
    keyword arguments, checked here as strictly as a --config file's values. BUDGET: "quick" or "full" (`gradlab
    all` and `report`); given["quick"] asks for the quick one too."""
    info = LESSONS[name]
    given = _keywords(info, given or {}) if python else dict(given or {})
    params, from_env = _cli_options().defaults(info.specs)
    explicit = set(given) | from_env
    if given.get("quick"):
        budget = "quick"
    if budget:
        params.update({k: v for k, v in budget_values(info, budget).items() if k not in explicit})
    if given.get("preset"):
        params.update(_preset(info, given["preset"], explicit))
    params.update(given)
    if not info.config.reports_here():  # e.g. a torchrun rank but 0: it computes, rank 0 prints and writes
        params = _silenced(params)
    _check_outputs(params.get("json_path"), params.get("plot_path"), params.get("graph_path"))
    return _config(info, params)


def budget_values(info: LessonInfo, budget: str) -> dict[str, Any]:
    """The option values of INFO's quick or full budget (LessonInfo.quick, LessonInfo.full), checked as strictly as
    gradlab.run's keyword arguments."""
    values = info.quick if budget == "quick" else info.full
    params = _cli_options().strict_params(info.specs)
    return {k: _cli_options().strict(params[k], v, f"LessonInfo.{budget} of {info.name}", k, python=True)
            for k, v in values.items()}


def defaults(name: str) -> dict[str, Any]:
    """Every option of lesson NAME at its default, as the command line gives it when no flag is typed."""
    return _cli_options().defaults(LESSONS[name].specs)[0]


def _cli_options():
    from gradlab.cli import options as cli_options  # click, imported when a run is resolved

    return cli_options


def _keywords(info: LessonInfo, kwargs: dict[str, Any]) -> dict[str, Any]:
    """gradlab.run's keyword arguments, each a known option of a value of its kind (in the order given)."""
    cli_options = _cli_options()
    where = f"gradlab.run({info.name!r})"
    known = {k: p for k, p in cli_options.strict_params(info.specs).items()
             if next(s for s in info.specs if s.name == k).opt.in_api}
    checked = {}
    for key, value in kwargs.items():
        if key not in known:
            close = difflib.get_close_matches(key, known, 1)
            raise GradlabError(f"{where}: unknown option {key}={value!r}"
                               + (f"; did you mean {close[0]}=?" if close else "")
                               + f" (options: {', '.join(known)})")
        if value is None and known[key].default is None:  # e.g. threads=None: the default policy
            checked[key] = None
            continue
        checked[key] = cli_options.strict(known[key], value, where, key, python=True)
    return checked


def _preset(info: LessonInfo, path: str, explicit: set[str]) -> dict[str, Any]:
    """The values of the preset or TOML file PATH, each a key a file may hold, of its option's kind; the options in
    EXPLICIT (given by the user) are left out: the user's flags override the file."""
    from gradlab import presets

    cli_options = _cli_options()
    in_file = {s.name for s in info.specs if s.opt.in_file}  # not where output goes
    by_key = {k: p for k, p in cli_options.strict_params(info.specs).items() if k in in_file}
    values = {}
    for key, value in presets.read(path).items():
        name = key.replace("-", "_")
        if name not in by_key:
            raise GradlabError(f"config file {path}: unknown key {key!r} for `gradlab {info.name}`; known keys: "
                               f"{', '.join(sorted(by_key))}")
        if name in explicit:
            continue  # a flag on the command line overrides the file
        if isinstance(value, dict | list):
            raise GradlabError(f"config file {path}: {key} must be a single value, got {value!r}")
        values[name] = cli_options.strict(by_key[name], value, f"config file {path}", key)
    return values


def _silenced(params: dict[str, Any]) -> dict[str, Any]:
    """PARAMS for a process that computes but neither prints nor writes (a torchrun rank other than 0): every
    option about output (those not recorded in the result: --json, --plot, --explain) off, and --quiet."""
    off = {s.name: s.default for s in options.specs(RunOptions) if not s.opt.recorded}
    return {**params, **off, "quiet": True}


def _check_outputs(json_path: str | None, plot_path: str | None, graph_path: str | None = None) -> None:
    """--json, --plot and --graph can be written, and no two are one file."""
    from gradlab.report.files import STDOUT, check_graph_suffix, check_writable, same_file

    check_writable(json_path, "--json")
    check_writable(plot_path, "--plot")
    check_graph_suffix(graph_path)
    check_writable(graph_path, "--graph")
    if same_file(json_path, plot_path):
        raise GradlabError(f"--json {json_path} and --plot {plot_path} name the same file; give them different "
                           f"files")
    for option, other in (("--json", json_path), ("--plot", plot_path)):
        if graph_path != STDOUT and same_file(graph_path, other):
            raise GradlabError(f"--graph {graph_path} and {option} {other} name the same file; give them different "
                               f"files")


def _config(info: LessonInfo, params: dict[str, Any]) -> tuple[RunOptions, LessonConfig]:
    """The run options and the lesson's Config (its __post_init__ validates and raises GradlabError), then what
    the Config checks before anything runs."""
    from gradlab.kit.threads import validate

    run, values = options.split(params)
    validate(run.threads)
    config = info.config(**values)
    config.check_launch(run.device)  # ports, GPUs, a launcher's variables
    if run.plot_path and config.plot_unavailable():
        raise GradlabError(f"--plot: {config.plot_unavailable()}")
    return run, config


def execute(name: str, run: RunOptions, config: LessonConfig, console=None, progress=lambda *a: None):
    """Run lesson NAME with the options and Config resolve() made; return its Result. CONSOLE (or None: nothing is
    printed) shows notes on the device and the data."""
    import torch
    from rich.markup import escape

    from gradlab.kit import threads
    from gradlab.kit.device import resolve_device

    info = LESSONS[name]
    n_threads, threads_why = threads.choose(run.threads)
    threads.apply(n_threads)
    lesson = info.load()
    device, device_note = resolve_device(run.device)
    if device.type != "cpu" and config.cpu_only:
        device, device_note = torch.device("cpu"), f"gradlab {name} runs on the CPU: {config.cpu_only}"
    if device_note and console is not None:
        console.print(f"[yellow]note:[/] {escape(device_note)}")
    kwargs: dict[str, Any] = {"device": device}
    if info.needs_data:
        from gradlab.kit import data as datasets

        data, notes = datasets.load(run.dataset, run.data_dir, run.offline)
        if console is not None:
            for note in notes:
                console.print(f"[yellow]note:[/] {escape(note)}")
            console.print(f"loaded [bold]{data.name}[/]: {len(data.y_train):,} training and {len(data.y_test):,} "
                          f"test images [dim]({escape(data.source)})[/]")
        kwargs["data"] = data
    start = time.perf_counter()
    result = lesson.run(config, progress=progress, **kwargs)
    wall_s = time.perf_counter() - start
    # what the lesson computed, and how this run went (which the lesson does not know)
    return dataclasses.replace(
        result, wall_s=wall_s, version=__version__, device=str(device), torch=torch.__version__,
        threads=torch.get_num_threads(), threads_why=threads_why, config=_recorded(info, run, config))


def _recorded(info: LessonInfo, run: RunOptions, config: LessonConfig) -> dict[str, Any]:
    """The options the result records ("config" in its JSON), in --help order."""
    out = {}
    for s in info.specs:
        if s.opt.recorded:
            value = getattr(run if s.name in options.RUN_NAMES else config, s.name)
            out[s.opt.recorded if isinstance(s.opt.recorded, str) else s.name] = \
                str(value) if isinstance(value, Path) else value
    return out
