"""Result files: JSON and PNG, written atomically (a temporary file renamed), so no half file is ever left."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from gradlab.errors import GradlabError, shorten
from gradlab.kit.result import Curve, Result

STDOUT = "-"  # as a file name: standard output


def check_writable(path: str | None, option: str) -> None:
    """Fail before any work when PATH cannot be written: its folder must exist and accept a new file."""
    if path is None:
        return
    if path == STDOUT:
        if sys.stdout is None or sys.stdout.closed:
            raise GradlabError(f"{option} -: standard output is closed; give a file name instead")
        return
    if not path.strip():
        raise GradlabError(f"{option} needs a file name (or - for standard output), got an empty one")
    try:
        _check_writable(Path(path), option)
    except OSError as e:  # a name too long for the file system, a path through a file, a loop of links
        raise GradlabError(f"{option} {shorten(path)}: {e.strerror or e}; choose another path") from None


def _check_writable(p: Path, option: str) -> None:
    path = str(p)
    folder = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise GradlabError(f"{option} {path} is a directory; give a file name such as {p / 'result.json'}")
    if p.exists() and not p.is_file():  # a device or a FIFO: written in place, so it must accept writes
        if not os.access(p, os.W_OK):
            raise GradlabError(f"{option} {path}: not writable; choose another path")
        return
    target = Path(os.path.realpath(p))  # through a symlink, the file it names is the one replaced
    if not target.parent.is_dir():
        raise GradlabError(f"{option} {path}: folder {target.parent} does not exist; create it or choose another path")
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:200]}.")
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise GradlabError(f"{option} {path}: cannot write in {folder} ({e.strerror}); choose another path") from None
    if len(target.name.encode()) > 255:  # the temporary file fits, the final name would not
        raise GradlabError(f"{option} {shorten(path)}: the file name is longer than 255 bytes; choose a shorter one")


GRAPH_SUFFIXES = (".html", ".svg")  # what --graph writes, besides - (a tree in the terminal)


def check_graph_suffix(path: str | None, option: str = "--graph") -> None:
    """--graph must end in .html or .svg, or be - (the terminal)."""
    if path and path != STDOUT and Path(path).suffix.lower() not in GRAPH_SUFFIXES:
        raise GradlabError(f"{option} {shorten(path)}: give a file ending in .html or .svg, or - for the terminal")


def same_file(a: str | None, b: str | None) -> bool:
    """Whether two output paths name the same file (through ./, .. or a symlink); "-" is standard output."""
    if not a or not b:
        return False
    if STDOUT in (a, b):
        return a == b
    return os.path.realpath(a) == os.path.realpath(b)


@contextlib.contextmanager
def atomic_path(path: str | Path, mode: int | None = None):
    """Yield a temporary path next to PATH; on success it is renamed to PATH (with MODE, default as a new file
    would get), on failure removed."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(dir=p.parent if str(p.parent) else ".", prefix=f".{p.name[:200]}.", suffix=p.suffix[:20])
    os.close(fd)
    try:
        yield tmp
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # mkstemp makes 0600; a result file is as readable as any other
        os.chmod(tmp, mode)
        os.replace(tmp, p)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json(path: str | Path, result: Result | dict[str, Any]) -> None:
    data = result.to_json() if isinstance(result, Result) else result
    write_bytes(path, (json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode())


def plot_png(result: Result, fmt: str = "png") -> bytes | None:
    """The curves as PNG bytes (FMT "svg": an SVG with the same panels, the same bytes on every run), one panel per
    curve (NaN/inf points are not drawn); None when there are none."""
    from matplotlib import rc_context, rcParams
    from matplotlib.figure import Figure  # an explicit Figure: no pyplot, no global backend change (a notebook's
    # inline plots keep working after a Result is shown)

    curves: list[tuple[str, Curve]] = [(k, c if isinstance(c, Curve) else Curve(**c)) for k, c in result.curves.items()]
    if not curves:
        return None
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    # constrained layout makes room for the legends under the panels: a legend never covers the data
    fig = Figure(figsize=(6.4 * len(curves), 4.9), layout="constrained")
    axes = fig.subplots(1, len(curves), squeeze=False)
    styles = ["-", "--", ":", "-."]  # lines that agree exactly lie on top of each other: vary the dash
    # One colour per variant on every panel ("manual" stays orange): the variant is the label before any ":"
    variants = list(dict.fromkeys(label.split(":")[0] for _, c in curves for label in c.series))
    palette = rcParams["axes.prop_cycle"].by_key()["color"]
    colour = {v: palette[i % len(palette)] for i, v in enumerate(variants)}
    for ax, (name, c) in zip(axes[0], curves, strict=True):
        for i, (label, ys) in enumerate(c.series.items()):
            n = min(len(c.x), len(ys))
            ax.plot([float(v) for v in c.x[:n]], [float(v) for v in ys[:n]], styles[i % len(styles)],
                    color=colour[label.split(":")[0]], marker="o" if n <= 30 else None, ms=3, label=label)
        for k, (label, y) in enumerate(c.refs.items()):  # e.g. the clip norm, CartPole's "solved" mark
            ax.axhline(y, color="0.35", lw=1.1, ls=(0, (5, 3)) if k % 2 == 0 else (0, (1, 2)), label=label, zorder=1)
        xs = [float(v) for v in c.x]
        if all(v.is_integer() for v in xs):  # epochs, steps: no tick at 1.25
            ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
        if xs and max(abs(v) for v in xs) >= 10_000:  # 150000 → 150k: ticks that do not run into each other
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:g}k"))
        ax.set(title=name, xlabel=c.xlabel, ylabel=c.ylabel)
        if c.logy:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
        entries = len(c.series) + len(c.refs)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncols=min(2, entries), fontsize=8,
                  frameon=False)
    fig.suptitle(textwrap.fill(f"gradlab {result.lesson}: {result.title}", 60 * len(curves)), fontsize=10)
    buffer = io.BytesIO()
    # an SVG's element ids are drawn from svg.hashsalt and its metadata holds the date: fixed, so that the plots the
    # docs site keeps (docs/plots/) change only when the curves do; text is drawn as paths, so no font is loaded
    with rc_context({"svg.hashsalt": "gradlab", "svg.fonttype": "path"}):
        fig.savefig(buffer, format=fmt, dpi=110, metadata={"Date": None} if fmt == "svg" else None)
    return buffer.getvalue()


def write_plot(path: str | Path, result: Result) -> None:
    """--plot PATH: the curves as an SVG when PATH ends in .svg, else as a PNG."""
    image = plot_png(result, "svg" if Path(str(path)).suffix.lower() == ".svg" else "png")
    if image is None:
        raise GradlabError(f"--plot: lesson {result.lesson} has no curves to plot")
    write_bytes(path, image)


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write DATA to PATH so that no half-written file is ever left. "-" is standard output. A regular file (or a
    new path) is replaced atomically, keeping an existing file's permissions; through a symlink, the file it names
    is replaced and the link kept. Anything else (a device such as /dev/null, a FIFO) is written in place, never
    replaced. A failed write is a GradlabError (one line, exit 2)."""
    if str(path) == STDOUT:
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        except (AttributeError, ValueError, OSError) as e:  # closed, or a pipe whose reader has gone
            if isinstance(e, BrokenPipeError):
                raise
            raise GradlabError(f"cannot write to standard output ({e}); give a file name instead") from None
        return
    target = Path(os.path.realpath(path))
    try:
        if target.exists() and not target.is_file():
            with open(target, "wb") as f:
                f.write(data)
            return
        mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else None
        with atomic_path(target, mode) as tmp, open(tmp, "wb") as f:
            f.write(data)
    except OSError as e:
        raise GradlabError(f"cannot write {path}: {e.strerror or e}; choose another path") from None
