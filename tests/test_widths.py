"""No number is ever cut: every lesson's tables and claims, rendered at 60, 80 and 120 columns, show each number
whole on one line (rich would otherwise ellipsise a cell that does not fit: 3.72e-44 printed as `3.7200…`)."""

import io

import pytest
from conftest import invoke
from rich.console import Console

import gradlab
import gradlab.api
from gradlab.kit.result import Column, Table
from gradlab.lessons import LESSONS
from gradlab.report import console as report

# Small budgets; the tables have the same columns as the full runs (dqn --compare and jacobian --scaling: the widest).
# A lesson not named here runs its quick budget.
SMALL = {"mnist": dict(epochs=1, dataset="mnist-sample", train_size=2000),
         "clip": dict(epochs=1, dataset="mnist-sample", train_size=2000),
         "jacobian": dict(scaling=True, sizes="4,8", repeats=1), "log1pexp": {}, "gaussian-policy": dict(epochs=20),
         "dqn": dict(compare=True, total_steps=1500, eval_every=500),
         "actor-critic": dict(total_steps=4000, eval_every=2000), "ddp": dict(workers=1, steps=2)}
RUNS = {name: SMALL.get(name, {"quick": True}) for name in LESSONS}
WIDTHS = (60, 80, 120)


def rendered(result, width: int) -> str:
    out = io.StringIO()
    report.render(result, Console(file=out, width=width, force_terminal=False, highlight=False))
    return out.getvalue()


def cells(text: str) -> set[str]:
    """Every table cell of the rendered text, stripped (a cut or folded number would not be one of them)."""
    return {cell.strip() for line in text.splitlines() for cell in line.split("│")}


def numbers(result) -> list[str]:
    """The text of every number cell and claim value/bound, as the console formats it."""
    out = []
    for t in result.tables:
        for row in t.rows:
            for value, column in zip(row, t.columns, strict=True):
                text, kind = report.cell_text(value, column.format)
                if kind != "text":
                    out.append(text)
    for c in result.claims:
        out += report.claim_cells(c)
    return out


@pytest.mark.parametrize("name", list(RUNS))
def test_every_number_is_whole_at_any_width(name):
    result = gradlab.run(name, **RUNS[name])  # one run, rendered at every width
    for width in WIDTHS:
        text = rendered(result, width)
        assert "…" not in text, text
        assert max(len(line) for line in text.splitlines()) <= width
        seen = cells(text)
        missing = [n for n in numbers(result) if n not in seen]
        assert not missing, f"cut or missing at {width} columns: {missing[:5]}\n{text}"


def test_a_table_too_wide_for_the_console_is_split_repeating_its_row_names():
    t = Table("wide", [Column(header=h) for h in ["x", "what", *[f"col {i}" for i in range(8)]]],
              [[i, "value", *[3.72007598e-44 * (k + 1) for k in range(8)]] for i in range(3)])
    out = io.StringIO()
    Console(file=out, width=60, force_terminal=False).print(report.render_table(t))
    text = out.getvalue()
    assert "wide (continued)" in text and "…" not in text
    assert text.count("┃ x ") == text.count("wide")  # every part repeats the row names
    assert "3.72008e-44" in cells(text) and "2.97606e-43" in cells(text)


@pytest.mark.parametrize("width", (60, 80))
def test_list_is_readable_at_narrow_widths(width, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(width))
    text = invoke("list").output
    assert "…" not in text
    for name in gradlab.api.list_lessons():
        assert f"gradlab {name['name']}" in text
