"""The report layer: any Result renders the same way, JSON stays valid, files are written atomically."""

import io
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from gradlab.kit.result import Claim, Column, Curve, Result, Table, json_safe
from gradlab.report import console as report
from gradlab.report.files import atomic_path, write_json, write_plot


def a_result(**overrides):
    fields = {
        "lesson": "demo", "title": "a demo lesson", "config": {"lr": 0.1}, "seed": 0,
        "metrics": {"a": {"epoch_cost": [1.0, float("nan")], "wall_s": 0.5}},
        "claims": [Claim("same", "a ≡ b", 0.0, 1e-6), Claim("differs", "a differs from c", 0.25, 0.0, ">")],
        "tables": [Table("costs", [Column(header="epoch"), Column(header="a", format=".3f")],
                         [[1, 1.0], [2, float("nan")]])],
        "curves": {"cost": Curve("epoch", "cost", [1, 2], {"a": [1.0, float("nan")]})},
        "data": {"name": "mnist-sample", "train": 100, "test": 10, "source": "bundled",
                 "available": {"train": 10000, "test": 10000}},
        "version": "0.1.0", "torch": "2.x", "threads": 2,
    }
    fields.update(overrides)
    return Result(**fields)


def rendered(result, width=100):
    out = io.StringIO()
    report.render(result, Console(file=out, width=width, force_terminal=False, highlight=False))
    return out.getvalue()


def test_render_shows_data_tables_and_claims():
    text = rendered(a_result())
    assert "data: mnist-sample — train 100 of 10,000, test 10 of 10,000" in text
    assert "1.000" in text and "nan" in text
    assert "a ≡ b" in text and "0.0" in text and "≤ 1e-06" in text and "> 0.0" in text
    assert "all 2 claims hold" in text


def test_a_failed_claim_and_a_stop_are_shown():
    result = a_result(claims=[Claim("same", "a ≡ b", 0.5, 1e-6)], stopped="the cost became nan at epoch 2, step 3")
    text = rendered(result)
    assert "✗" in text and "1 of 1 claims failed" in text and "stopped: the cost became nan" in text
    assert result.exit_code == 1


def test_render_from_saved_json_equals_render_from_result(tmp_path):
    result = a_result()
    write_json(tmp_path / "r.json", result)
    saved = json.loads((tmp_path / "r.json").read_text())
    assert rendered(saved) == rendered(result)


def test_a_tables_json_keeps_headers_and_formats_as_two_lists():
    """A Table is Column objects, but --json writes what it always did: the headers and the formats as two lists,
    formats null when every column takes its type's default; and it reads back to the same table."""
    table = Table("costs", [Column(header="epoch"), Column(header="a", format=".3f")], [[1, 1.0], [2, None]])
    assert table.to_json() == {"title": "costs", "columns": ["epoch", "a"], "rows": [[1, 1.0], [2, None]],
                               "formats": [None, ".3f"], "note": ""}
    plain = Table("t", [Column(header="x")], [[1]], note="n")
    assert plain.to_json() == {"title": "t", "columns": ["x"], "rows": [[1]], "formats": None, "note": "n"}
    assert Table.from_json(table.to_json()) == table and Table.from_json(plain.to_json()) == plain
    assert a_result().to_json()["tables"][0]["formats"] == [None, ".3f"]
    with pytest.raises(TypeError):
        Table("t", ["x"], [[1]])  # a header alone is not a column


@pytest.mark.parametrize(("value", "bound", "op", "passed"), [
    (0.0, 1e-6, "<=", True), (1e-6, 1e-6, "<=", True), (2e-6, 1e-6, "<=", False),
    (float("nan"), 1e-6, "<=", False), (float("nan"), 0.0, ">", False), (0.1, 0.0, ">", True), (0.0, 0.0, ">", False),
])
def test_claims_compare_value_and_bound(value, bound, op, passed):
    assert Claim("c", "c", value, bound, op).passed is passed


@given(st.recursive(st.floats() | st.integers() | st.text() | st.booleans() | st.none(),
                    lambda children: st.lists(children) | st.dictionaries(st.text(), children), max_leaves=20))
def test_json_safe_always_gives_valid_json(value):
    text = json.dumps(json_safe(value), allow_nan=False)
    assert json.loads(text) is not None or value is None or text == "null"


def test_non_finite_numbers_become_strings():
    assert json_safe([float("nan"), float("inf"), -math.inf, 1.5]) == ["nan", "inf", "-inf", 1.5]


def test_atomic_path_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.json"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        with open(tmp, "w") as f:
            f.write("half")
        raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []


def test_plot_is_a_png(tmp_path):
    write_plot(tmp_path / "p.png", a_result())
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
