"""Result files: JSON and PNG, written atomically (a temporary file renamed), so no half file is ever left."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from gradlab.errors import GradlabError
from gradlab.result import Curve, Result


def check_writable(path: str | None, option: str) -> None:
    """Fail before any work when PATH cannot be written: its folder must exist and accept a new file."""
    if not path:
        return
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise GradlabError(f"{option} {path} is a directory; give a file name such as {p / 'result.json'}")
    if not folder.is_dir():
        raise GradlabError(f"{option} {path}: folder {folder} does not exist; create it or choose another path")
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{p.name}.")
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise GradlabError(f"{option} {path}: cannot write in {folder} ({e.strerror}); choose another path") from None


@contextlib.contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path next to PATH; on success it is renamed to PATH, on failure removed."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(dir=p.parent if str(p.parent) else ".", prefix=f".{p.name}.", suffix=p.suffix)
    os.close(fd)
    try:
        yield tmp
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a result file is as readable as any other
        os.replace(tmp, p)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json(path: str | Path, result: Result | dict[str, Any]) -> None:
    data = result.to_json() if isinstance(result, Result) else result
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)


def plot_png(result: Result) -> bytes | None:
    """The curves as PNG bytes, one panel per curve (NaN/inf points are not drawn); None when there are none."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves: list[tuple[str, Curve]] = [(k, c if isinstance(c, Curve) else Curve(**c)) for k, c in result.curves.items()]
    if not curves:
        return None
    fig, axes = plt.subplots(1, len(curves), figsize=(6.4 * len(curves), 4.2), squeeze=False)
    styles = ["-", "--", ":", "-."]  # lines that agree exactly lie on top of each other: vary the dash
    for ax, (name, c) in zip(axes[0], curves, strict=True):
        for i, (label, ys) in enumerate(c.series.items()):
            n = min(len(c.x), len(ys))
            ax.plot([float(v) for v in c.x[:n]], [float(v) for v in ys[:n]], styles[i % len(styles)],
                    marker="o" if n <= 30 else None, ms=3, label=label)
        ax.set(title=name, xlabel=c.xlabel, ylabel=c.ylabel)
        if c.logy:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(textwrap.fill(f"gradlab {result.lesson}: {result.title}", 60 * len(curves)), fontsize=10)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return buffer.getvalue()


def write_plot(path: str | Path, result: Result) -> None:
    png = plot_png(result)
    if png is None:
        raise GradlabError(f"--plot: lesson {result.lesson} has no curves to plot")
    write_bytes(path, png)


def write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(data)
