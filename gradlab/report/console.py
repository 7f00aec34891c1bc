"""Render any Result the same way: header, notes, tables, claims. Also the progress bar."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable
from rich.text import Text

from gradlab.result import Claim, Result, Table

OP_SIGNS = {"<=": "≤", "<": "<", ">": ">", ">=": "≥", "==": "="}


def make_console(quiet: bool = False, file=None, stderr: bool = False) -> Console:
    """STDERR: print the report there, when standard output carries a --json or --plot written to "-"."""
    return Console(file=file, quiet=quiet, highlight=False, stderr=stderr)


def error_line(message: str) -> None:
    """One line on stderr for bad input; no traceback."""
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"[bold red]gradlab: error:[/] {message}",
                                                                markup=True)


def cell_text(value: Any, spec: str | None = None) -> tuple[str, str]:
    """A table cell as (text, kind): kind is "bad" for NaN/inf (also as the JSON strings), "num" for a number
    formatted by SPEC (default: ints as they are, floats .6g), "text" otherwise; None is a blank. The console
    and the HTML page render cells through this one function."""
    if value is None:
        return "", "text"
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return value, "bad"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value), "text"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value), "bad"
    if isinstance(value, float) and abs(value) >= 1e9:  # a blown-up number: 2.331e+25, not 26 digits
        return format(value, ".4g"), "num"
    if spec:
        return format(value, spec), "num"
    return (str(value) if isinstance(value, int) else format(value, ".6g")), "num"


def fmt(value: Any, spec: str | None = None) -> Text:
    """A cell for rich: NaN/inf in red."""
    text, kind = cell_text(value, spec)
    return Text(text, style="bold red" if kind == "bad" else "")


def fmt_number(v: float) -> str:
    if isinstance(v, str):
        return v
    if v == 0:
        return "0.0"
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return format(v, ".7g" if abs(v) >= 0.01 else ".3g")  # bounds like 1.000001 need their digits


def render_table(t: Table) -> RichTable:
    table = RichTable(title=t.title, title_justify="left")
    specs = t.formats or [None] * len(t.columns)
    first = t.rows[0] if t.rows else []
    for i, col in enumerate(t.columns):
        text = i == 0 or (i < len(first) and isinstance(first[i], str))  # names left, numbers right
        table.add_column(col, justify="left" if text else "right")
    for row in t.rows:
        table.add_row(*(fmt(v, s) for v, s in zip(row, specs, strict=True)))
    return table


def render_claims(claims: list[Claim]) -> RichTable:
    table = RichTable(title="claims checked at run time", title_justify="left")
    for col, justify in (("", "center"), ("claim", "left"), ("measured", "right"), ("bound", "right")):
        table.add_column(col, justify=justify)
    for c in claims:
        mark = Text("✓", style="bold green") if c.passed else Text("✗", style="bold red")
        table.add_row(mark, c.text, fmt_number(c.value), f"{OP_SIGNS[c.op]} {fmt_number(c.bound)}")
    return table


def threads_text(n: int, why: str = "") -> str:
    """e.g. "1 thread (small tensors: …)"."""
    return f"{n} thread{'' if n == 1 else 's'}" + (f" ({why})" if why else "")


def data_line(data: dict[str, Any]) -> str:
    """e.g. data: mnist-sample — train 10,000 of 10,000, test 3,000 of 10,000 (data/mnist-sample, bundled)"""
    avail = data.get("available", {})
    return (f"data: [bold]{data['name']}[/] — train {data['train']:,} of {avail.get('train', data['train']):,}, "
            f"test {data['test']:,} of {avail.get('test', data['test']):,}  [dim]({data.get('source', '')})[/]")


def render(result: Result | dict[str, Any], console: Console) -> None:
    """Print a result: title, environment, data, notes, tables, claims, and why it stopped if it did."""
    r = result if isinstance(result, dict) else result.to_json()
    console.rule(f"[bold]gradlab {r['lesson']}[/]: {r['title']}")
    console.print(f"gradlab {r['version']} · torch {r['torch']} · device {r['device']} · "
                  f"{threads_text(r['threads'], r.get('threads_why', ''))} · seed {r['seed']}")
    if r.get("data"):
        console.print(data_line(r["data"]))
    for note in r.get("notes", []):
        console.print(f"[yellow]note:[/] {note}")
    for t in r.get("tables", []):
        t = t if isinstance(t, Table) else Table(**t)
        console.print(render_table(t))
        if t.note:
            console.print(f"[dim]{t.note}[/]")
    claims = [c if isinstance(c, Claim) else _claim_from_dict(c) for c in r.get("claims", [])]
    if claims:
        console.print(render_claims(claims))
    if r.get("stopped"):
        console.print(f"[bold red]stopped:[/] {r['stopped']}")
    failed = [c for c in claims if not c.passed]
    if failed:
        console.print(f"[bold red]{len(failed)} of {len(claims)} claims failed[/]")
    elif claims and not r.get("stopped"):
        console.print(f"[bold green]all {len(claims)} claims hold[/]")


def _claim_from_dict(d: dict[str, Any]) -> Claim:
    def num(v):
        return float(v) if isinstance(v, str) else v

    return Claim(d["id"], d["text"], num(d["value"]), num(d["bound"]), d.get("op", "<="))


@contextlib.contextmanager
def progress_bar(console: Console, enabled: bool = True) -> Iterator:
    """Yield progress(description, completed, total): a rich bar on a terminal, nothing otherwise."""
    if not enabled or console.quiet or not console.is_terminal:
        yield lambda *a: None
        return
    bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                   TimeElapsedColumn(), console=console, transient=True)
    task = bar.add_task("starting", total=None)
    with bar:
        yield lambda description, completed, total: bar.update(task, description=description,
                                                                 completed=completed, total=total)
