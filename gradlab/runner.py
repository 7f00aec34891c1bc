"""The one path from what a user gave to a run, and the run. Every front end calls resolve(): the command line
(cli/main.py), `gradlab all` and `report` (cli/classroom.py) and gradlab.run (api.py); then execute(). No click here:
the values click did not parse are checked with the options' Specs (gradlab.kit.options), and a lesson's checks
(OptionError) are worded in the caller's terms: `--lr` and `try --lr 0.01` for the command line and a --config file,
`lr` and `e.g. lr=0.01` for gradlab.run.

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

from gradlab import presets
from gradlab.errors import GradlabError, OptionError, shorten
from gradlab.kit import data as datasets
from gradlab.kit import heap, options, threads
from gradlab.kit.device import resolve_device
from gradlab.kit.options import LessonConfig, RunOptions, Spec
from gradlab.lessons import LESSONS, LessonInfo
from gradlab.report.files import STDOUT, check_graph_suffix, check_writable, same_file
from gradlab.version import __version__


def resolve(name: str, given: dict[str, Any] | None = None, *, python: bool = False,
            budget: str | None = None) -> tuple[RunOptions, LessonConfig]:
    """Lesson NAME's run options and Config from what the user GAVE (option name → value), checked before anything
    runs: bad input raises GradlabError with one line that says the fix, in the caller's terms.

    GIVEN: values click already parsed (the flags typed, `gradlab all --threads`) or, with PYTHON, gradlab.run's
    keyword arguments, checked here as strictly as a --config file's values. BUDGET: "quick" or "full" (`gradlab
    all` and `report`); given["quick"] asks for the quick one too."""
    info = LESSONS[name]
    given = _keywords(info, given or {}) if python else dict(given or {})
    params, from_env = _defaults(info)
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
    try:
        return _config(info, params)
    except OptionError as e:  # worded for the command line (and a --config file); gradlab.run says lr=, not --lr
        if not python:
            raise
        raise e.in_python(f"gradlab.run({name!r})") from None


def budget_values(info: LessonInfo, budget: str) -> dict[str, Any]:
    """The option values of INFO's quick or full budget (LessonInfo.quick, LessonInfo.full), checked as strictly as
    gradlab.run's keyword arguments."""
    values = info.quick if budget == "quick" else info.full
    by_name = {s.name: s for s in info.specs}
    return {k: _strict(by_name[k], v, f"LessonInfo.{budget} of {info.name}", k, python=True)
            for k, v in values.items()}


def defaults(name: str) -> dict[str, Any]:
    """Every option of lesson NAME at its default, as the command line gives it when no flag is typed."""
    return _defaults(LESSONS[name])[0]


def _defaults(info: LessonInfo) -> tuple[dict[str, Any], set[str]]:
    """Every option of INFO at its default, or at its environment variable's value (GRADLAB_DATA: --data-dir), as
    click gives them when no flag is typed; and the names an environment variable set."""
    params, from_env = {s.name: s.default for s in info.specs}, set()
    for s in info.specs:
        text = s.from_environment()
        if text is None:
            continue
        try:
            params[s.name] = s.convert(text)
        except ValueError as e:
            raise GradlabError(f"environment variable {s.opt.envvar}: {e}") from None
        from_env.add(s.name)
    return params, from_env


def _keywords(info: LessonInfo, kwargs: dict[str, Any]) -> dict[str, Any]:
    """gradlab.run's keyword arguments, each a known option of a value of its kind (in the order given)."""
    where = f"gradlab.run({info.name!r})"
    known = {s.name: s for s in info.specs if s.opt.in_api}
    checked = {}
    for key, value in kwargs.items():
        if key not in known:
            close = difflib.get_close_matches(key, known, 1)
            raise GradlabError(f"{where}: unknown option {key}={value!r}"
                               + (f"; did you mean {close[0]}=?" if close else "")
                               + f" (options: {', '.join(known)})")
        none_is_default = value is None and known[key].default is None  # e.g. threads=None: the default policy
        checked[key] = None if none_is_default else _strict(known[key], value, where, key, python=True)
    return checked


def _preset(info: LessonInfo, path: str, explicit: set[str]) -> dict[str, Any]:
    """The values of the preset or TOML file PATH, each a key a file may hold, of its option's kind; the options in
    EXPLICIT (given by the user) are left out: the user's flags override the file."""
    by_key = {s.name: s for s in info.specs if s.opt.in_file}  # not where output goes
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
        values[name] = _strict(by_key[name], value, f"config file {path}", key)
    return values


def _strict(spec: Spec, value: Any, where: str, key: str, python: bool = False) -> Any:
    """VALUE for the option SPEC, strictly of its kind (click would quietly turn 1.5 into 1 and true into 1), then
    as the option holds it (Spec.convert); otherwise GradlabError naming WHERE and KEY, with a value of the right
    kind as the fix, written as TOML does (a --config file) or, with PYTHON, as a keyword argument (gradlab.run)."""
    shown = repr(value) if python or not isinstance(value, bool) else str(value).lower()  # as it was written
    fix = f"{key}={_example(spec.kind, python=True)}" if python else f"{key} = {_example(spec.kind)}"
    if not spec.holds(value):
        raise GradlabError(f"{where}: {key} must be {spec.kind}, got {_short(shown)}; e.g. {fix}")
    try:
        return spec.convert(value)
    except OverflowError:  # an integer too large for a float: lr = 10**400
        raise GradlabError(f"{where}: {key} = {_short(shown)} is too large; e.g. {fix}") from None
    except ValueError as e:  # not one of the choices, out of the range, a file where a folder is wanted
        problem = e if python else f"Invalid value for '{spec.flag_names[0]}': {e}"  # a file's: as click says it
        raise GradlabError(f"{where}: bad value for {key}: {problem}") from None


def _short(text: str) -> str:
    """A value as shown in a message: a 400-digit number is cut to its first digits."""
    return shorten(text, 40, count=True)


_EXAMPLES = {"a whole number": "10", "a number": "0.01", "true or false": "true", "text": '"…"'}


def _example(kind: str, python: bool = False) -> str:
    """A value of KIND as a fix in a message: as TOML writes it, or (PYTHON) as a keyword argument would."""
    return "True" if python and kind == "true or false" else _EXAMPLES[kind]


def _silenced(params: dict[str, Any]) -> dict[str, Any]:
    """PARAMS for a process that computes but neither prints nor writes (a torchrun rank other than 0): every
    option about output (those not recorded in the result: --json, --plot, --explain) off, and --quiet."""
    off = {s.name: s.default for s in options.specs(RunOptions) if not s.opt.recorded}
    return {**params, **off, "quiet": True}


def _check_outputs(json_path: str | None, plot_path: str | None, graph_path: str | None = None) -> None:
    """--json, --plot and --graph can be written, and no two are one file."""
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
    run, values = options.split(params)
    threads.validate(run.threads)
    config = info.config(**values)
    config.check_launch(run.device)  # ports, GPUs, a launcher's variables
    if run.plot_path and config.plot_unavailable():
        raise GradlabError(f"--plot: {config.plot_unavailable()}")
    return run, config


def execute(name: str, run: RunOptions, config: LessonConfig, console=None, progress=lambda *a: None):
    """Run lesson NAME with the options and Config resolve() made; return its Result. CONSOLE (or None: nothing is
    printed) shows notes on the device and the data."""
    import torch  # here, not at start-up
    from rich.markup import escape

    info = LESSONS[name]
    n_threads, threads_why = threads.choose(run.threads)
    threads.apply(n_threads)
    lesson = info.load()
    heap.imported()  # torch and the lesson loaded: frozen where gradlab owns the collector (gradlab.kit.heap)
    device, device_note = resolve_device(run.device)
    if device.type != "cpu" and config.cpu_only:
        device, device_note = torch.device("cpu"), f"gradlab {name} runs on the CPU: {config.cpu_only}"
    if device_note and console is not None:
        console.print(f"[yellow]note:[/] {escape(device_note)}")
    kwargs: dict[str, Any] = {"device": device}
    if info.needs_data:
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
