"""What every lesson returns: a Result with metrics, tables, curves and claims checked at run time.

This module does not import torch, so the report layer (and `gradlab show`) can use it cheaply.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

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

    id: str
    text: str
    value: float
    bound: float
    op: str = "<="
    kind: str = "number"  # "yes/no": value 1 is yes, 0 is no, and the report prints the words
    passed: bool = field(init=False)

    def __post_init__(self) -> None:
        v = float(self.value)
        # NaN never satisfies a claim: comparisons with NaN are False, which is what we want.
        self.passed = bool(OPS[self.op](v, float(self.bound))) if not math.isnan(v) else False

    @classmethod
    def yes_no(cls, id: str, text: str, holds: bool) -> Claim:
        """A claim that is a yes/no question (TEXT states what should be so): measured yes or no, bound yes."""
        return cls(id, text, 1.0 if holds else 0.0, 1.0, "==", "yes/no")


@dataclass
class Table:
    """A table the report layer renders as is: cells are numbers, strings or None (blank).

    formats: one Python format spec per column (None: the default for its type), e.g. ".9f" for costs.
    """

    title: str
    columns: list[str]
    rows: list[list[Any]]
    formats: list[str | None] | None = None
    note: str = ""


@dataclass
class Curve:
    """Series that share one x axis, drawn as one panel of the --plot PNG."""

    xlabel: str
    ylabel: str
    x: list[float]
    series: dict[str, list[float]]
    logy: bool = False
    refs: dict[str, float] = field(default_factory=dict)  # reference lines across the panel: {label: y}


@dataclass
class Result:
    lesson: str
    title: str
    config: dict[str, Any]
    seed: int
    metrics: dict[str, Any]
    claims: list[Claim]
    tables: list[Table] = field(default_factory=list)
    curves: dict[str, Curve] = field(default_factory=dict)
    data: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    stopped: str | None = None  # why training stopped early (e.g. the cost became NaN), else None
    # Filled in by the runner, not the lesson:
    device: str = "cpu"
    torch: str = ""
    threads: int = 0
    threads_why: str = ""  # why that many threads (gradlab.threads)
    version: str = ""
    wall_s: float = 0.0  # the lesson's run, from Config to Result (not data loading)

    def _repr_html_(self) -> str:
        """How Jupyter shows a Result: its section of `gradlab report`'s page (one renderer for both)."""
        from gradlab.report.html import result_html

        return result_html(self)

    @property
    def exit_code(self) -> int:
        """0 when every claim holds and training finished, 1 otherwise."""
        return 0 if self.stopped is None and all(c.passed for c in self.claims) else 1

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict: NaN/inf become the strings "nan"/"inf"/"-inf" so the file stays valid JSON."""
        d = asdict(self)
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
    import json
    import os

    from gradlab.errors import GradlabError

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

    def bad(what: str) -> GradlabError:
        return GradlabError(f"{path} is not a gradlab result: {what}; re-create it with --json")

    if not isinstance(data, dict):
        raise bad("the top level is not an object")
    for key, kind in REQUIRED.items():
        if not isinstance(data.get(key), kind):
            raise bad(f"{key!r} is missing or not a {kind.__name__}")
    for c in data["claims"]:
        if not (isinstance(c, dict) and {"id", "text", "value", "bound", "passed"} <= set(c)
                and c.get("op", "<=") in OPS):
            raise bad("a claim lacks id, text, value, bound or passed")
    for t in data["tables"]:
        if not (isinstance(t, dict) and isinstance(t.get("columns"), list) and isinstance(t.get("rows"), list)
                and all(isinstance(r, list) and len(r) == len(t["columns"]) for r in t["rows"])):
            raise bad(f"table {t.get('title', '?') if isinstance(t, dict) else '?'!r} is malformed")
        if t.get("formats") is not None and len(t["formats"]) != len(t["columns"]):
            raise bad(f"table {t.get('title', '?')!r} has formats that do not match its columns")
    data.setdefault("threads", 0)
    data.setdefault("threads_why", "")
    return data
