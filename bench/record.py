"""Where the benches keep what they measured: bench/results/<bench>.json, committed, rendered into the docs by
scripts/readme.py's `<!-- bench: ... -->` blocks (the pages never type a measured figure).

Each file carries what makes its figures honest: when, on which machine (CPU model, cores, GPU if any), with which
torch, at which niceness and under which load (the load average before and after each part), and the exact command
of each row. Writes are atomic (a temporary file beside it, then a rename): an interrupted bench leaves the old file
whole.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def cpu_model() -> str:
    """The CPU's model name as the kernel reports it (/proc/cpuinfo), else the platform's guess."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu() -> str | None:
    """The first CUDA GPU's name, or None (torch is imported only when a bench already has it)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_name(0)


def load() -> list[float]:
    """The 1-, 5- and 15-minute load averages, rounded."""
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    """The machine and software a measurement ran on, and how busy the machine was when it started."""
    return {"measured": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "cpu": cpu_model(), "cpus": os.cpu_count(), "gpu": gpu(), "torch": metadata.version("torch"),
            "python": platform.python_version(), "nice": os.nice(0), "load_average_before": load()}


def command() -> str:
    """The bench's own command line, as run from the repository's root."""
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(RESULTS.parent.parent) if script.is_relative_to(RESULTS.parent.parent) else script
    return shlex.join(["python", str(shown), *sys.argv[1:]])


def path(bench: str) -> Path:
    return RESULTS / f"{bench}.json"


def read(bench: str) -> dict[str, Any]:
    """What bench/results/<bench>.json holds, or {} when it does not exist yet."""
    p = path(bench)
    return json.loads(p.read_text(encoding="utf-8")) if p.exists() else {}


def write(bench: str, data: dict[str, Any]) -> Path:
    """Write bench/results/<bench>.json atomically."""
    RESULTS.mkdir(exist_ok=True)
    p = path(bench)
    fd, tmp = tempfile.mkstemp(dir=RESULTS, prefix=f".{bench}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, ensure_ascii=False, allow_nan=False)  # written as it is encoded
            f.write("\n")
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p
