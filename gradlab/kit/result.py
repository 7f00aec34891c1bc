"""What every lesson returns: a Result with metrics, tables, curves and claims checked at run time.

This module does not import torch, so the report layer (and `gradlab show`) can use it cheaply.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from gradlab.errors import GradlabError

# The comparison a claim makes between its measured value and its bound.
OPS = {
    "<=": lambda v, b: v <= b,
    "<": lambda v, b: v < b,
    ">": lambda v, b: v > b,
    ">=": lambda v, b: v >= b,
    "==": lambda v, b: v == b,
}


@dataclass
class Claim:
    """A teaching point stated as a measured number against a bound, e.g. max |ΔW| = 0.0 ≤ 1e-6."""

    id: str  # a short stable name, e.g. "manual-equals-optimizer" (what a test or a grader looks up)
    text: str  # what the claim says, in words, as the report prints it
    value: float  # what the run measured (NaN: not measured, and the claim fails)
    bound: float  # what the value is compared with
    op: str = "<="  # the comparison: value OP bound, one of <=, <, >, >=, ==
    # "yes/no": value 1 is yes, 0 is no, and the report prints the words; "not reached": the run stopped before this
    # check could be made (value NaN: it fails), and the report says so instead of a number
    kind: str = "number"
    passed: bool = field(init=False)  # value OP bound held (computed, never given; NaN never holds)

    def __post_init__(self) -> None:
        v = float(self.value)
        # NaN never satisfies a claim: comparisons with NaN are False, which is what we want.
        self.passed = bool(OPS[self.op](v, float(self.bound))) if not math.isnan(v) else False

    @classmethod
    def yes_no(cls, id: str, text: str, holds: bool) -> Claim:
        """A claim that is a yes/no question (TEXT states what should be so): measured yes or no, bound yes."""
        return cls(id, text, 1.0 if holds else 0.0, 1.0, "==", "yes/no")

    @classmethod
    def not_reached(cls, id: str, text: str, bound: float, op: str = "<=") -> Claim:
        """A check the run stopped before (a syntax error, an exception, a time limit): it fails, and is shown as
        not reached rather than as a wrong number."""
        return cls(id, text, math.nan, bound, op, NOT_REACHED)

    @property
    def mark(self) -> str:
        return mark(self.passed, self.kind)

    @property
    def line(self) -> str:
        """The claim as one plain line: its mark and text, and "(not reached)" where the run stopped before it."""
        return f"{self.mark} {self.text}" + (" (not reached)" if self.kind == NOT_REACHED else "")


NOT_REACHED = "not reached"
KINDS = ("number", "yes/no", NOT_REACHED)


def mark(passed: bool, kind: str) -> str:
    """✓ held, ✗ failed, – not reached (the run stopped before it)."""
    return "✓" if passed else "–" if kind == NOT_REACHED else "✗"


def verdict(claims: list[Claim]) -> str:
    """The line under the claims: all hold, how many failed, how many the run never reached."""
    unreached = sum(c.kind == NOT_REACHED for c in claims)
    failed = sum(not c.passed for c in claims) - unreached
    if not failed and not unreached:
        return "the claim holds" if len(claims) == 1 else f"all {len(claims)} claims hold"
    if not failed:
        return ("the claim was not reached: the run stopped before it" if len(claims) == 1 else
                f"{unreached} of {len(claims)} claims not reached: the run stopped before them")
    return f"{failed} of {len(claims)} claims failed" + (f", {unreached} not reached" if unreached else "")


@dataclass(frozen=True, kw_only=True)
class Column:
    """One column of a Table: its header and how its numbers are written (as rich's Column carries its header and
    justify). Text columns are left, number columns right: the report decides by the cells (the first column, and a
    column whose first cell is text, are text)."""

    header: str  # the line at its top, e.g. "test accuracy" (a unit goes in it: "wall s", "comm ms/step")
    format: str | None = None  # a Python format spec for its numbers, e.g. ".9f" (None: ints as they are, floats .6g)


@dataclass
class Table:
    """A table the report layer renders as is: its columns, and rows of plain cells (numbers, strings or None for a
    blank), one per column."""

    title: str  # the line above the table
    columns: list[Column]  # its columns, each with its header and format
    rows: list[list[Any]]  # one list of cells per row, as many as the columns
    note: str = ""  # a line under the table

    def __post_init__(self) -> None:
        if not all(isinstance(c, Column) for c in self.columns):
            raise TypeError(f"table {self.title!r}: columns must be Column objects")
        if any(len(row) != len(self.columns) for row in self.rows):
            raise ValueError(f"table {self.title!r}: a row's cells do not match its {len(self.columns)} columns")

    @property
    def headers(self) -> list[str]:
        return [c.header for c in self.columns]

    def to_json(self) -> dict[str, Any]:
        """As --json writes it: the headers and the formats as two lists ("formats": null when every column takes
        its type's default)."""
        formats = [c.format for c in self.columns]
        return {"title": self.title, "columns": self.headers, "rows": self.rows,
                "formats": formats if any(f is not None for f in formats) else None, "note": self.note}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Table:
        """A table as to_json wrote it (checked by result_problem first, for a file)."""
        formats = data.get("formats") or [None] * len(data["columns"])
        return cls(data["title"], [Column(header=h, format=f) for h, f in zip(data["columns"], formats, strict=True)],
                   data["rows"], data.get("note", ""))


@dataclass
class Curve:
    """Series that share one x axis, drawn as one panel of the --plot PNG."""

    xlabel: str  # the x axis's label, e.g. "epoch"
    ylabel: str  # the y axis's label, e.g. "cost"
    x: list[float]  # the x values every series shares
    series: dict[str, list[float]]  # {name: y values, one per x}
    logy: bool = False  # a logarithmic y axis
    refs: dict[str, float] = field(default_factory=dict)  # reference lines across the panel: {label: y}


@dataclass
class Result:
    """What a lesson's run (or a check of a submission) returns: what it measured, its claims, its tables and curves,
    and how the run went. `gradlab.run` and `gradlab.check` return one; `--json` writes `to_json()`."""

    lesson: str  # the lesson's name, e.g. "mnist" (a check's: the exercise's lesson)
    title: str  # one line saying what the run shows
    seed: int  # the seed it ran with
    metrics: dict[str, Any]  # every measured number the claims and tables are made of, by name (the lesson's own)
    claims: list[Claim]  # what the run checked, each measured against its bound
    tables: list[Table] = field(default_factory=list)  # what the report prints, in order
    curves: dict[str, Curve] = field(default_factory=dict)  # {panel name: curve}: what --plot draws
    data: dict[str, Any] | None = None  # the data set it trained on (name, sizes, where from), if any
    notes: list[str] = field(default_factory=list)  # lines the report prints under the tables
    stopped: str | None = None  # why training stopped early (e.g. the cost became NaN), else None
    # How the run went, which the lesson does not know: filled in by the runner (gradlab.runner.execute).
    config: dict[str, Any] = field(default_factory=dict)  # the options it ran with
    device: str = "cpu"  # the device it ran on, e.g. "cpu" or "cuda:0"
    torch: str = ""  # torch's version
    threads: int = 0  # the CPU threads torch used
    threads_why: str = ""  # why that many threads (gradlab.kit.threads)
    version: str = ""  # gradlab's version
    wall_s: float = 0.0  # the lesson's run, from Config to Result (not data loading)

    def __repr__(self) -> str:
        """Short, for a console or a log (print(gradlab.check(...)) outside Jupyter): what it is and how it went."""
        failed = sum(not c.passed for c in self.claims)
        return (f"<Result {self.lesson}: {self.title!r}, {len(self.claims)} claims, {failed} failed"
                + (f", stopped: {self.stopped!r}" if self.stopped else "") + ">")

    def __str__(self) -> str:
        """The claims with ✓/✗, why it stopped and the diagnosis, as plain lines (the full tables: gradlab's report)."""
        lines = [self.title, *(f"  {c.line}" for c in self.claims)]
        if self.stopped:
            lines.append(f"stopped: {self.stopped}")
        if self.metrics.get("diagnosis"):
            lines.append(f"diagnosis: {self.metrics['diagnosis']}")
        lines.append(verdict(self.claims))
        return "\n".join(lines)

    @property
    def exit_code(self) -> int:
        """0 when every claim holds and training finished, 1 otherwise."""
        return 0 if self.stopped is None and all(c.passed for c in self.claims) else 1

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict: NaN/inf become the strings "nan"/"inf"/"-inf" so the file stays valid JSON."""
        d = {**asdict(self), "tables": [t.to_json() for t in self.tables]}
        keys = ["lesson", "title", "version", "config", "data", "device", "torch", "threads", "threads_why", "seed",
                "metrics", "claims", "tables", "curves", "notes", "stopped"]
        return json_safe({k: d[k] for k in keys})


def json_safe(value: Any) -> Any:
    """Recursively turn a value into plain JSON types, with non-finite floats as strings."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if hasattr(value, "item"):  # numpy / torch scalars
        return json_safe(value.item())
    return str(value)


REQUIRED = {"lesson": str, "title": str, "version": str, "device": str, "torch": str, "seed": int, "claims": list,
            "tables": list, "metrics": dict}


def load_result(path) -> dict[str, Any]:
    """Read and validate a result saved with --json; GradlabError (one line) if it is not one."""
    if os.path.exists(path) and not os.path.isfile(path):  # a FIFO would block, a device never ends
        raise GradlabError(f"{path} is not a regular file; give a file written by --json or gradlab report")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise GradlabError(f"{path} does not exist; give a file written by --json or gradlab report") from None
    except UnicodeDecodeError:
        raise GradlabError(f"{path} is not a text file; give a .json file from --json or gradlab report") from None
    except OSError as e:
        raise GradlabError(f"cannot read {path}: {e.strerror}; check the path and its permissions") from None
    if text.lstrip().startswith("<"):
        raise GradlabError(f"{path} is an HTML page, not a result; give one of the .json files gradlab report wrote "
                           f"beside it")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise GradlabError(f"{path} is not valid JSON ({e.msg} at line {e.lineno}); was the file cut short?") from None
    except RecursionError:
        raise GradlabError(f"{path} nests too deeply to be a gradlab result; give a file written by --json") from None
    problem = result_problem(data)
    if problem:
        raise GradlabError(f"{path} is not a gradlab result: {problem}; re-create it with --json")
    data.setdefault("threads", 0)
    data.setdefault("threads_why", "")
    return data


CELL = (str, int, float, bool, type(None))
NUMBER_STRINGS = ("nan", "inf", "-inf")  # how to_json writes non-finite numbers


def _number(v: Any) -> bool:
    return (isinstance(v, int | float) and not isinstance(v, bool)) or (isinstance(v, str) and v in NUMBER_STRINGS)


def _strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _format_ok(spec: Any) -> bool:
    if spec is None:
        return True
    if not isinstance(spec, str):
        return False
    try:
        format(1.5, spec)
        return True
    except (ValueError, TypeError):
        return False


def result_problem(data: Any) -> str | None:
    """What makes DATA (a parsed --json file) not a result gradlab can show, or None. Everything the renderer
    reads is checked here, so a file that passes renders without error, and its verdict matches its claims."""
    if not isinstance(data, dict):
        return "the top level is not an object"
    for key, kind in REQUIRED.items():
        if not isinstance(data.get(key), kind) or (kind is int and isinstance(data[key], bool)):
            return f"{key!r} is missing or not a {kind.__name__}"
    for key, kind in (("threads", int), ("threads_why", str), ("notes", list), ("stopped", str | None),
                      ("data", dict | None), ("curves", dict)):
        if key in data and (not isinstance(data[key], kind) or isinstance(data[key], bool)):
            return f"{key!r} is not of the right kind"
    if not _strings(data.get("notes", [])):
        return "a note is not text"
    d = data.get("data")
    if d is not None and not (isinstance(d.get("name"), str) and all(
            isinstance(d.get(k), int) and not isinstance(d.get(k), bool) for k in ("train", "test"))
            and isinstance(d.get("available", {}), dict)
            and all(isinstance(v, int) for v in d.get("available", {}).values())):
        return "'data' lacks its name or sizes"
    for c in data["claims"]:
        if not (isinstance(c, dict) and isinstance(c.get("id"), str) and isinstance(c.get("text"), str)
                and _number(c.get("value")) and _number(c.get("bound")) and isinstance(c.get("passed"), bool)
                and isinstance(c.get("op", "<="), str) and c.get("op", "<=") in OPS
                and isinstance(c.get("kind", "number"), str) and c.get("kind", "number") in KINDS):
            return "a claim lacks id, text, a numeric value and bound, or passed"
        claim = Claim(c["id"], c["text"], float(c["value"]), float(c["bound"]), c.get("op", "<="),
                      c.get("kind", "number"))
        if claim.passed != c["passed"]:  # the verdict and the exit code come from the same numbers
            return f"claim {c['id']!r} says passed={str(c['passed']).lower()}, but its value and bound say otherwise"
    for t in data["tables"]:
        if not (isinstance(t, dict) and isinstance(t.get("title"), str) and _strings(t.get("columns"))
                and isinstance(t.get("rows"), list) and isinstance(t.get("note", ""), str)
                and all(isinstance(r, list) and len(r) == len(t["columns"]) and all(isinstance(v, CELL) for v in r)
                        for r in t["rows"])):
            return f"table {t.get('title', '?') if isinstance(t, dict) else '?'!r} is malformed"
        formats = t.get("formats")
        if formats is not None and not (isinstance(formats, list) and len(formats) == len(t["columns"])
                                        and all(_format_ok(f) for f in formats)):
            return f"table {t.get('title', '?')!r} has formats that do not match its columns"
    return None
