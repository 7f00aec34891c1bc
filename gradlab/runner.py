"""Run one lesson from its options: Config → device → data → run → Result. Shared by the command line, `gradlab
all`/`report` and gradlab.run.

torch is imported here, never at start-up.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from gradlab import settings
from gradlab.errors import GradlabError
from gradlab.lessons import LESSONS
from gradlab.version import __version__


def defaults(name: str) -> dict[str, Any]:
    """Every option of lesson NAME at its default, as the command line gives it when no flag is typed."""
    return settings.parse(LESSONS[name].specs, [])[0]


def quick_values(name: str) -> dict[str, Any]:
    """The option values lesson NAME's quick budget sets (LessonInfo.quick: the arguments `gradlab all --quick`
    gives it), parsed by its own options."""
    params, given = settings.parse(LESSONS[name].specs, LESSONS[name].quick)
    return {k: params[k] for k in given}


def make_config(name: str, params: dict[str, Any]):
    """The lesson's Config from parsed options (its __post_init__ validates and raises GradlabError), then what it
    checks before anything runs."""
    from gradlab.threads import validate

    run, values = settings.split(params)
    validate(run.threads)
    config = LESSONS[name].config(**values)
    config.check_launch(run.device)  # ports, GPUs, a launcher's variables
    if run.plot_path and config.plot_unavailable():
        raise GradlabError(f"--plot: {config.plot_unavailable()}")
    return config


def execute(name: str, params: dict[str, Any], console=None, progress=lambda *a: None, config=None):
    """Run lesson NAME with PARAMS (already merged with any --config file); return its Result.

    CONFIG: the lesson's Config when the caller already built (and so validated) it from PARAMS."""
    import torch
    from rich.markup import escape

    from gradlab import threads
    from gradlab.device import resolve_device

    info = LESSONS[name]
    config = config or make_config(name, params)
    run, _ = settings.split(params)
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
        from gradlab import data as datasets

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
    recorded = {s.name for s in info.specs if s.opt.recorded}
    # what the lesson computed, and how this run went (which the lesson does not know)
    return dataclasses.replace(
        result, wall_s=wall_s, version=__version__, device=str(device), torch=torch.__version__,
        threads=torch.get_num_threads(), threads_why=threads_why,
        config={k: (str(v) if isinstance(v, Path) else v) for k, v in params.items() if k in recorded})
