"""Run one lesson from parsed options: Config → device → data → run → Result. Shared by every command.

torch is imported here, never at start-up.
"""

from __future__ import annotations

import importlib
import time
import warnings
from pathlib import Path
from typing import Any

from gradlab import __version__
from gradlab.errors import GradlabError
from gradlab.lessons import LESSONS

# Options that steer the run or its output; everything else is a field of the lesson's Config.
RUN_OPTIONS = {"config", "json_path", "plot_path", "quiet", "explain", "device", "dataset", "data_dir", "offline",
               "threads", "quick"}


def lesson_module(name: str):
    # torch's own modules warn that torch.jit.script is deprecated when torch.func loads: not the user's concern
    warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.* is deprecated", category=FutureWarning)
    return importlib.import_module(f"gradlab.lessons.{LESSONS[name].module}")


def make_config(name: str, params: dict[str, Any]):
    """The lesson's Config from parsed options (its __post_init__ validates and raises GradlabError)."""
    from gradlab.threads import validate

    validate(params.get("threads"))
    module = lesson_module(name)
    config = module.Config(**{k: v for k, v in params.items() if k not in RUN_OPTIONS})
    if hasattr(module, "check_launch"):  # what a lesson can check before it runs: ports, GPUs, a launcher's variables
        module.check_launch(config, params["device"])
    if params.get("plot_path") and hasattr(module, "plot_unavailable") and module.plot_unavailable(config):
        raise GradlabError(f"--plot: {module.plot_unavailable(config)}")
    return config


def execute(name: str, params: dict[str, Any], console=None, progress=lambda *a: None, config=None):
    """Run lesson NAME with PARAMS (already merged with any --config file); return its Result.

    CONFIG: the lesson's Config when the caller already built (and so validated) it from PARAMS."""
    import torch
    from rich.markup import escape

    from gradlab import threads
    from gradlab.device import resolve_device

    config = config or make_config(name, params)
    n_threads, threads_why = threads.choose(params.get("threads"))
    threads.apply(n_threads)
    module = lesson_module(name)
    device, device_note = resolve_device(params["device"])
    if device.type != "cpu" and hasattr(module, "CPU_ONLY"):
        device, device_note = torch.device("cpu"), f"gradlab {name} runs on the CPU: {module.CPU_ONLY}"
    if device_note and console is not None:
        console.print(f"[yellow]note:[/] {escape(device_note)}")
    kwargs: dict[str, Any] = {"device": device}
    if LESSONS[name].needs_data:
        from gradlab import data as datasets

        data, notes = datasets.load(params["dataset"], params["data_dir"], params["offline"])
        if console is not None:
            for note in notes:
                console.print(f"[yellow]note:[/] {escape(note)}")
            console.print(f"loaded [bold]{data.name}[/]: {len(data.y_train):,} training and {len(data.y_test):,} "
                          f"test images [dim]({escape(data.source)})[/]")
        kwargs["data"] = data
    start = time.perf_counter()
    result = module.run(config, progress=progress, **kwargs)
    result.wall_s = time.perf_counter() - start
    result.config = {k: (str(v) if isinstance(v, Path) else v) for k, v in params.items()
                     if k not in ("json_path", "plot_path", "quiet", "explain")}
    result.device, result.torch = str(device), torch.__version__
    result.threads, result.threads_why = torch.get_num_threads(), threads_why
    result.version = __version__
    return result
