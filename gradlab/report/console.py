"""Render any Result the same way: header, notes, tables, claims. Also the progress bar."""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Iterator
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable
from rich.text import Text

from gradlab.ascii import is_unicode, printable
from gradlab.kit.result import NOT_REACHED, Claim, Result, Table, verdict

OP_SIGNS = {"<=": "≤", "<": "<", ">": ">", ">=": "≥", "==": "="}
MIN_TEXT = 12  # a text column is never squeezed below this many characters (it wraps instead)


def _printable_text(cell: Text, encoding: str) -> Text:
    plain = printable(cell.plain, encoding)
    if plain == cell.plain:
        return cell
    return Text(plain, style=cell.style, no_wrap=cell.no_wrap, justify=cell.justify)


class GradlabConsole(Console):
    """rich's Console, with two changes. Where the console's encoding cannot show gradlab's symbols (≡, σ, ✓, the
    box lines), they are spelled in ASCII (rich already draws ASCII borders there) instead of ending the run in a
    UnicodeEncodeError; files gradlab writes stay UTF-8. And a broken pipe (`gradlab jacobian | head`) ends the
    program as a shell reports a program killed by SIGPIPE, exit code 141, instead of rich's exit code 1, which
    gradlab uses for a failed claim."""

    def _render_buffer(self, buffer) -> str:
        return printable(super()._render_buffer(buffer), self.encoding)

    def on_broken_pipe(self) -> None:
        self.quiet = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(141)


def make_console(quiet: bool = False, file=None, stderr: bool = False) -> Console:
    """STDERR: print the report there, when standard output carries a --json or --plot written to "-"."""
    return GradlabConsole(file=file, quiet=quiet, highlight=False, stderr=stderr)


def error_line(message: str) -> None:
    """One line on stderr for bad input; no traceback. The message is text, never markup: `pip install
    'gradlab-teach[full]'` or a path with brackets prints as written."""
    console = GradlabConsole(stderr=True, highlight=False, soft_wrap=True)
    console.print(f"[bold red]gradlab: error:[/] {escape(message)}", markup=True)


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
        try:
            return format(value, spec), "num"
        except (ValueError, TypeError):  # ",d" for a float, say: the number as it is rather than no report
            pass
    return (str(value) if isinstance(value, int) else format(value, ".6g")), "num"


def fmt(value: Any, spec: str | None = None) -> Text:
    """A cell for rich: NaN/inf in red; a number never wraps (no_wrap marks it for FittedTable)."""
    text, kind = cell_text(value, spec)
    return Text(text, style="bold red" if kind == "bad" else "", no_wrap=kind != "text")


def fmt_number(v: float) -> str:
    if isinstance(v, str):
        return v
    if v == 0:
        return "0.0"
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return format(v, ".7g" if abs(v) >= 0.01 else ".3g")  # bounds like 1.000001 need their digits


def render_table(t: Table) -> FittedTable:
    first = t.rows[0] if t.rows else []
    # names left, numbers right
    numeric = [i > 0 and not (i < len(first) and isinstance(first[i], str)) for i in range(len(t.columns))]
    rows = [[fmt(v, c.format) for v, c in zip(row, t.columns, strict=True)] for row in t.rows]
    return FittedTable(t.title, t.headers, rows, numeric)


def claim_cells(c: Claim) -> tuple[str, str]:
    """(measured, bound) as printed: yes/no for a yes/no claim, else the numbers."""
    if c.kind == "yes/no":
        return ("yes" if c.value == 1 else "no"), "= yes"
    if c.kind == NOT_REACHED:
        return NOT_REACHED, f"{OP_SIGNS[c.op]} {fmt_number(c.bound)}"
    return fmt_number(c.value), f"{OP_SIGNS[c.op]} {fmt_number(c.bound)}"


def render_claims(claims: list[Claim]) -> FittedTable:
    rows = []
    for c in claims:
        mark = Text(c.mark, style={"✓": "bold green", "✗": "bold red"}.get(c.mark, "bold yellow"))
        measured, bound = claim_cells(c)
        rows.append([mark, Text(c.text), Text(measured, no_wrap=True, style="yellow" if c.kind == NOT_REACHED
                                              else ""), Text(bound, no_wrap=True)])
    return FittedTable("claims checked at run time", ["", "claim", "measured", "bound"], rows,
                       [False, False, True, True])


class FittedTable:
    """A table whose numbers are never cut, at any width: rich ellipsises a cell that does not fit, and a cut number
    is a wrong number. Number columns are never narrower than their widest number; text wraps (long words fold).
    When the numbers alone do not fit the width, the columns are split over several tables, each repeating the
    leading text columns (the row's name), as a wide spreadsheet is printed on several pages."""

    def __init__(self, title: str, columns: list[str], rows: list[list[Text]], numeric: list[bool],
                 show_lines: bool = False, min_text: int = MIN_TEXT):
        self.title, self.columns, self.rows, self.numeric = title, columns, rows, numeric
        self.show_lines, self.min_text = show_lines, min_text

    def widths(self) -> tuple[list[int], list[int], list[int]]:
        """(natural, needed, words) content width of each column: what it takes on one line; the least it can
        have (its widest number; a text column at most MIN_TEXT, folding the rest); what it takes to wrap its text
        between words only (its longest word)."""
        natural, needed, words = [], [], []
        for i, col in enumerate(self.columns):
            cells = [row[i] for row in self.rows]
            natural.append(max([cell_len(col), *(c.cell_len for c in cells)]))
            numbers = [c.cell_len for c in cells if c.no_wrap]
            texts = [c.cell_len for c in cells if not c.no_wrap] + [cell_len(col)]
            needed.append(max([*numbers, min(max(texts), self.min_text)]))
            longest = max(cell_len(w) for c in [*cells, Text(col)] for w in [*c.plain.split(), ""])
            words.append(max(needed[-1], min(natural[-1], longest)))
        return natural, needed, words

    def __rich_console__(self, console: Console, options: ConsoleOptions):
        if not is_unicode(options.encoding):  # spelled in ASCII before the layout,
            encoding = options.encoding  # so that the columns fit what is printed
            table = FittedTable(printable(self.title, encoding), [printable(c, encoding) for c in self.columns],
                                [[_printable_text(c, encoding) for c in row] for row in self.rows], self.numeric,
                                self.show_lines, self.min_text)
        else:
            table = self
        yield from table.layout(options.max_width)

    def layout(self, width: int):
        natural, needed, words = self.widths()
        keys = next((i for i, n in enumerate(self.numeric) if n), len(self.numeric)) or 1
        for part, (chunk, widths) in enumerate(fit_columns(natural, needed, width, keys, words)):
            # titles and headers are text, never markup: a saved result's "[/x]" prints as written
            table = RichTable(title=Text(self.title + (" (continued)" if part else "")), title_justify="left",
                              show_lines=self.show_lines)
            for i, w in zip(chunk, widths, strict=True):
                table.add_column(Text(self.columns[i]), width=w, overflow="fold",
                                 justify="right" if self.numeric[i] else "left")
            for row in self.rows:
                table.add_row(*(row[i] for i in chunk))
            yield table


def fit_columns(natural: list[int], needed: list[int], width: int, keys: int = 1,
                words: list[int] | None = None) -> list[tuple[list[int], list[int]]]:
    """Lay out columns of NATURAL (one line) and NEEDED (least) content widths in WIDTH characters: [(the columns
    of one table, their widths)]; several tables when the columns' needs exceed the width, each repeating the first
    KEYS columns. Room left over goes first to the columns whose longest word (WORDS) does not fit yet."""
    words = words or needed
    def frame(n: int) -> int:  # borders and padding of a table of n columns: "│ a │ b │"
        return 3 * n + 1

    def spread(cols: list[int]) -> list[int]:
        """Each column's need, then the room left: first to the columns furthest from their longest word, then to
        those furthest from their natural width."""
        widths = [needed[i] for i in cols]
        room = width - frame(len(cols)) - sum(widths)
        for goal in (words, natural):
            while room > 0:
                k = max(range(len(cols)), key=lambda j: goal[cols[j]] - widths[j])
                if goal[cols[k]] <= widths[k]:
                    break
                widths[k] += 1
                room -= 1
        return widths

    all_cols = list(range(len(natural)))
    if sum(natural) + frame(len(natural)) <= width:
        return [(all_cols, list(natural))]
    key_cols = all_cols[:keys]
    chunks: list[list[int]] = [list(key_cols)]
    for i in all_cols[keys:]:
        chunk = chunks[-1]
        if len(chunk) > keys and sum(needed[j] for j in [*chunk, i]) + frame(len(chunk) + 1) > width:
            chunks.append(list(key_cols))
        chunks[-1].append(i)
    return [(chunk, spread(chunk)) for chunk in chunks]


def threads_text(n: int, why: str = "") -> str:
    """e.g. "1 thread (small tensors: …)"."""
    return f"{n} thread{'' if n == 1 else 's'}" + (f" ({why})" if why else "")


def data_line(data: dict[str, Any]) -> str:
    """e.g. data: mnist-sample — train 10,000 of 10,000, test 3,000 of 10,000 (data/mnist-sample, bundled)"""
    avail = data.get("available", {})
    which = f" ({escape(str(data['train_images']))})" if data.get("train_images") else ""  # e.g. images 5,000–59,999
    return (f"data: [bold]{escape(str(data['name']))}[/] — train {data['train']:,} of "
            f"{avail.get('train', data['train']):,}{which}, test {data['test']:,} of "
            f"{avail.get('test', data['test']):,}  "
            f"[dim]({escape(str(data.get('source', '')))})[/]")


def render(result: Result | dict[str, Any], console: Console) -> None:
    """Print a result: title, environment, data, notes, tables, claims, and why it stopped if it did."""
    r = result if isinstance(result, dict) else result.to_json()
    console.rule(f"[bold]gradlab {escape(r['lesson'])}[/]")  # a rule cuts a long title: it goes on its own line, whole
    console.print(f"[bold]{escape(r['title'])}[/]")
    console.print(f"gradlab {r['version']} · torch {r['torch']} · device {r['device']} · "
                  f"{threads_text(r['threads'], r.get('threads_why', ''))} · seed {r['seed']}", markup=False)
    if r.get("data"):
        console.print(data_line(r["data"]))
    for note in r.get("notes", []):
        console.print(f"[yellow]note:[/] {escape(note)}")
    for t in r.get("tables", []):
        t = t if isinstance(t, Table) else Table.from_json(t)
        console.print(render_table(t))
        if t.note:
            console.print(f"[dim]{escape(t.note)}[/]")
    claims = [c if isinstance(c, Claim) else _claim_from_dict(c) for c in r.get("claims", [])]
    if claims:
        console.print(render_claims(claims))
    diagnosis = (r.get("metrics") or {}).get("diagnosis")  # gradlab check: which mistake, and its fix
    if isinstance(diagnosis, str):
        console.print(f"[bold yellow]diagnosis:[/] {escape(diagnosis)}")
    if r.get("stopped"):
        console.print(f"[bold red]stopped:[/] {escape(r['stopped'])}")
    for line in student_output(r.get("metrics") or {}):  # gradlab check: what the submission printed and warned
        console.print(line, markup=False, highlight=False, style="dim" if line.startswith("  ") else None)
    if any(not c.passed for c in claims):
        console.print(f"[bold red]{escape(verdict(claims))}[/]")
    elif claims and not r.get("stopped"):
        console.print(f"[bold green]{verdict(claims)}[/]")


def visible(text: str) -> str:
    """TEXT with every control character but newline and tab shown escaped (\\x1b), so that what a submission
    printed can never pass for gradlab's own output."""
    return "".join(c if c.isprintable() or c in "\n\t" else ascii(c)[1:-1] for c in text)


def student_output(metrics: dict[str, Any]) -> list[str]:
    """The lines `gradlab check` shows under the checks: the last lines the submission printed, with the total
    size, and the warnings it raised (indented lines are theirs)."""
    lines = []
    printed, total = metrics.get("printed"), metrics.get("printed_bytes")
    if isinstance(printed, str) and printed:
        shown = printed.splitlines()
        n = metrics.get("printed_lines", len(shown))
        lines.append(f"your code printed {total:,} bytes ({n:,} line{'s' * (n != 1)})"
                     + (f"; the last {len(shown)}:" if len(shown) < n else ":"))
        lines += ["  " + visible(line) for line in shown]
    warnings = metrics.get("warnings")
    if isinstance(warnings, list) and warnings:
        lines.append("warnings your code raised:")
        lines += ["  " + visible(str(w)) for w in warnings]
    return lines


def _claim_from_dict(d: dict[str, Any]) -> Claim:
    def num(v):
        return float(v) if isinstance(v, str) else v

    return Claim(d["id"], d["text"], num(d["value"]), num(d["bound"]), d.get("op", "<="), d.get("kind", "number"))


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
