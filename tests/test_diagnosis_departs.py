"""#45's general experiments, each on its own (no sandbox, no corpus file): where the first NaN or inf of a
submission appears (the sandbox's rerun of one input, every torch operation of the student's file watched, and the
backward under anomaly detection), the other axis of an input, an index tensor with one entry per column."""

from __future__ import annotations

import torch

from gradlab.practice.inside import child
from gradlab.practice.judging.diagnosis import first_nonfinite
from gradlab.practice.judging.exception_advice import explain_error
from gradlab.practice.judging.shape_relations import shape_relation
from gradlab.practice.sandbox import returned


def _forward_overflow(z):
    e = torch.exp(z)  # overflows above 88.7 in float32
    return e / e.sum()


def _sqrt_at_zero(t):
    n = torch.sqrt((t * t).sum())
    return t * 1.0 / torch.clamp(n, min=1.0)


def test_the_first_nonfinite_forward_operation_is_named_by_the_students_line():
    line = child.first_nonfinite(lambda: _forward_overflow(torch.tensor([1.0, 100.0])))
    assert line.startswith(f"{_forward_overflow.__code__.co_firstlineno + 1}: e = torch.exp(z)"), line
    assert "exp made the first NaN or inf" in line
    assert child.first_nonfinite(lambda: _forward_overflow(torch.tensor([1.0, 2.0]))) == ""  # finite: nothing


def test_a_backward_that_returns_nan_is_named_by_its_forward_line():
    def call():
        t = torch.zeros(3, dtype=torch.float64, requires_grad=True)
        torch.autograd.grad(_sqrt_at_zero(t).sum(), t)

    line = child.first_nonfinite(call)
    assert line.startswith(f"{_sqrt_at_zero.__code__.co_firstlineno + 1}: n = torch.sqrt"), line
    assert "SqrtBackward0" in line


def test_the_line_is_said_only_where_the_expected_is_finite():
    cases = [{"label": "zeros"}]
    nan, fine = {"y": torch.tensor([float("nan"), 1.0])}, {"y": torch.tensor([0.0, 1.0])}
    said = first_nonfinite(cases, [nan], [fine], {"input": 0, "line": "7: n = x.sqrt()"})
    assert "'zeros' run again" in said and said.endswith("your line 7: n = x.sqrt()")
    assert first_nonfinite(cases, [nan], [nan], {"input": 0, "line": "7: n = x.sqrt()"}) == ""
    assert first_nonfinite(cases, [nan], [fine], {"input": 3, "line": "7"}) == ""


def test_the_sandboxs_line_is_checked_and_sanitized_on_the_way_out():
    got = {"ok": True, "outputs": [{}], "nonfinite": {"input": 0, "line": "3: x\x1b[2J = y\n" + "z" * 900}}
    line = returned._checked(got, None)["nonfinite"]["line"]
    assert "\x1b" not in line and "\n" not in line and len(line) <= 300
    assert "nonfinite" not in returned._checked({**got, "nonfinite": {"input": 5, "line": "3"}}, None)
    assert "nonfinite" not in returned._checked({**got, "nonfinite": "3: x"}, None)


def test_a_1d_output_the_length_of_an_inputs_other_dimension_is_said_as_the_other_axis():
    y = torch.zeros(100, 10)
    said = shape_relation(torch.zeros(100), torch.zeros(10), {"y": y})
    assert "dimension 0 of the input y (100, 10)" in said and "dim=1 where dim=0 belongs" in said
    assert shape_relation(torch.zeros(7), torch.ones(10), {"y": y}) == ""


def test_an_index_with_one_entry_per_column_is_said_so():
    error = ("f() raised on the input 'x': RuntimeError: index 25 is out of bounds for dimension 1 with size 2 (line "
             "3: q = Q.gather(1, a.unsqueeze(1))); the tensors on that line: Q (32, 2) float64, a (2,) int64")
    said = explain_error(type("C", (), {"errors": []})(), error)
    assert "a (2,) has as many entries as dimension 1 has (2), where one per row of Q (32, 2) (32)" in said
    assert "one per row" in said and "argmax(dim=0)" in said
    plain = explain_error(type("C", (), {"errors": []})(), error.replace("a (2,) int64", "a (32,) int64"))
    assert "as many entries" not in plain


class _NanBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, dy):
        return dy * float("nan")


def test_a_students_own_backward_that_returns_nan_is_named():
    def call():
        x = torch.ones(2, requires_grad=True)
        torch.autograd.grad(_NanBackward.apply(x).sum(), x)

    line = child.first_nonfinite(call, function=_NanBackward)
    at = _NanBackward.backward.__code__.co_firstlineno + 1  # below @staticmethod
    assert line == f"{at}: the backward of your _NanBackward (it returned the first NaN)", line


def test_an_operation_of_a_file_not_the_students_is_not_named():
    line = child.first_nonfinite(lambda: _forward_overflow(torch.tensor([1.0, 100.0])), mine=lambda f: False)
    assert line == ""


def test_the_sandbox_names_the_line_where_the_first_nan_appears(tmp_path):
    """One real sandbox (`gradlab check`): the child's rerun, the wire, Received and the sentence together."""
    from conftest import invoke

    path = tmp_path / "softplus.py"
    path.write_text("# gradlab-exercise: log1pexp.softplus\nimport torch\n\n\ndef softplus(x):\n"
                    "    e = torch.exp(x)\n    return torch.log(1 + e)\n")
    text = " ".join(invoke("check", str(path)).output.split())
    assert "your line 6: e = torch.exp(x) (exp made the first NaN or inf, from finite arguments)" in text, text
