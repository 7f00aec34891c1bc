"""#45 point 2: the student's line where a value first departs (gradlab/practice/inside/trace.py records the
operations, gradlab/practice/judging/departure.py matches them with the reference's). The rule on small functions
traced here, one corpus file judged end to end in this process, and the sandbox's trace checked on its way out."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from inprocess import judged_file

from gradlab.practice.inside import trace, wire
from gradlab.practice.judging.departure import departing_line
from gradlab.practice.sandbox import returned, traced

HERE = __file__


def _line(student, reference, *inputs):
    """(line, code) the rule names for STUDENT against REFERENCE on INPUTS, or None."""
    mine = trace.Tracer(trace.watched_file(lambda f: f == HERE)).run(lambda: student(*inputs))
    theirs = trace.Tracer(trace.everywhere).run(lambda: reference(*inputs))
    assert mine["complete"] and theirs["complete"]
    wrong = student(*inputs)
    return departing_line(mine["nodes"], theirs["nodes"], list(inputs), [wrong], 1e-6, [reference(*inputs)])


def _softmax(z):
    e = torch.exp(z)
    return e / e.sum()


def _one_too_many(z):
    e = torch.exp(z)
    f = e + 1  # the mistake
    s = f.sum()
    return f / s


def _own_route_then_doubled(z):
    e = torch.exp(z - z.max())  # not what the reference computes on the way: rejoins at p
    p = e / e.sum()
    return p * 2  # the mistake


def _two_mistakes(z):
    e = torch.exp(z)
    a = e + 1  # one mistake
    b = e * 2  # another, apart from the first
    return a / b.sum()


Z = torch.tensor([0.5, -1.0, 2.0, 0.25], dtype=torch.float64)


def test_a_departure_whose_inputs_match_is_named_by_its_line():
    line, code = _line(_one_too_many, _softmax, Z)
    assert (line, code) == (_one_too_many.__code__.co_firstlineno + 2, "f = e + 1  # the mistake")


def test_a_students_own_route_that_rejoins_the_reference_is_not_named():
    said = _line(_own_route_then_doubled, _softmax, Z)
    assert said[1] == "return p * 2  # the mistake"  # not exp(z - max), which the reference never computes


def test_two_lines_that_depart_apart_are_not_named():
    assert _line(_two_mistakes, _softmax, Z) is None


def test_a_right_value_used_where_another_belongs_is_not_named():
    def reference(x, y):
        return x @ (y / 4)

    def student(x, y):
        a, b = x.clone(), y.clone()
        return a @ b  # b holds a right value (y), but the reference never multiplies x by it

    x, y = torch.randn(3, 4, dtype=torch.float64), torch.randn(4, 2, dtype=torch.float64)
    # the reference's matmul takes x and y / 4, never y: the missing division is on no line the trace has
    assert _line(student, reference, x, y) is None


def test_a_corpus_answer_is_pointed_at_its_planted_line_end_to_end():
    path = Path(__file__).parent / "practice_corpus" / "dqn.td_loss" / "wrong_mse.py"
    said = judged_file(str(path), "dqn.td_loss").metrics["diagnosis"]
    assert "your line 13 `return F.mse_loss(q, y)` computes a value that matches none" in said, said


def _sent(node_changes=None, **trace_changes):
    node = {"line": 3, "code": "y = x\x1b[2J * 2\n", "op": "mul", "args": [], "inputs": 1, "kind": "value",
            "value": torch.ones(3)}
    node.update(node_changes or {})
    one = {"input": 0, "complete": True, "nodes": [node]}
    one.update(trace_changes)
    return wire.decode(wire.encode({"ok": True, "outputs": [{"y": torch.ones(3)}], "traced": [one]}))


def test_the_sandboxs_trace_is_checked_and_sanitized_and_a_bad_one_dropped_whole():
    got = returned._checked(_sent(), [{"y": torch.zeros(3)}])
    node = got["traced"][0]["nodes"][0]
    assert "\x1b" not in node["code"] and "\n" not in node["code"] and torch.equal(node["value"], torch.ones(3))
    hostile = [_sent({"args": [0]}),  # an argument that is not an earlier node
               _sent({"args": [-2]}), _sent({"kind": "pickle"}), _sent({"line": "3"}),
               _sent(input=1),  # an input that is not there
               _sent(nodes=[{}] * (trace.MOST_OPS + 1))]
    for sent in hostile:
        got = returned._checked(sent, [{"y": torch.zeros(3)}])
        assert got["ok"] and got.get("traced") is None  # the outputs still judged, the trace gone
    assert traced.checked([{"input": 0, "complete": True, "nodes": []}] * 2, 1) is None  # two for one input
    assert traced.checked("nodes", 1) is None
    view = {"line": 3, "code": "", "op": "mul", "args": [], "inputs": 1, "kind": "value",
            "value": torch.ones(9000)[::3000]}
    assert traced.checked([{"input": 0, "complete": True, "nodes": [view]}], 1) is None  # storage beyond its values


def test_a_trace_cut_short_inside_no_grad_leaves_the_thread_as_it_was():
    def long(x):
        with torch.no_grad():
            for _ in range(trace.MOST_OPS + 10):
                x = x + 1
        return x

    got = trace.Tracer(trace.watched_file(lambda f: f == HERE)).run(lambda: long(torch.zeros(2)))
    assert not got["complete"] and got["nodes"] == [] and torch.is_grad_enabled()


def _doubled(x):
    return x * 2


def test_the_child_sends_a_finite_answers_trace_and_none_of_a_slow_one(monkeypatch):
    from types import SimpleNamespace

    from gradlab.practice.inside import child

    harness = SimpleNamespace(call=lambda fn, case: {"y": fn(case["x"])})
    cases = [{"label": "two", "x": torch.ones(2)}, {"label": "three", "x": torch.ones(3)}]
    got = child._outputs(harness, cases, None, lambda: _doubled, child.Forbidden([]), "f", [])
    assert [t["input"] for t in got["traced"]] == [0, 1] and all(t["complete"] for t in got["traced"])
    node = got["traced"][0]["nodes"][0]
    assert (node["line"], node["code"], node["op"]) == (_doubled.__code__.co_firstlineno + 1, "return x * 2", "mul")
    monkeypatch.setattr(trace, "MOST_S", -1.0)  # every first run is "slow" now
    assert "traced" not in child._outputs(harness, cases, None, lambda: _doubled, child.Forbidden([]), "f", [])


def test_one_real_sandbox_sends_the_trace_and_the_line_is_said(tmp_path):
    """`gradlab check` in the sandbox: the child's trace, the wire, traced.py and the sentence together."""
    from conftest import invoke

    path = tmp_path / "td_loss.py"
    path.write_text((Path(__file__).parent / "practice_corpus" / "dqn.td_loss" / "wrong_mse.py").read_text())
    text = " ".join(invoke("check", str(path)).output.split())
    assert "your line 13 `return F.mse_loss(q, y)` computes a value that matches none" in text, text


def test_a_trace_the_wire_cannot_carry_is_not_sent():
    from gradlab.practice.inside import child

    node = {"line": 1, "code": "", "op": "mul", "args": [], "inputs": 1, "kind": "value"}
    assert child._sendable([{"input": 0, "complete": True, "nodes": [dict(node, value=torch.ones(2))]}])
    assert not child._sendable([{"input": 0, "complete": True,
                                 "nodes": [dict(node, value=torch.ones(2, dtype=torch.complex64))]}])


def _masked_late(r, q, done):
    m = q.max(dim=1).values
    y = r + 0.9 * m  # the reference masks m here
    return y * (1 - done)  # the student masks the whole target: the mistake's line, after the first departure


def _masked(r, q, done):
    return r + 0.9 * (1 - done) * q.max(dim=1).values


def test_a_step_the_reference_takes_earlier_makes_the_line_unsaid():
    r, done = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    q = torch.tensor([[0.5, 1.5], [-1.0, -2.0], [4.0, 3.0]], dtype=torch.float64)
    assert _line(_masked_late, _masked, r, q, done) is None


def test_the_references_trace_touches_nothing_process_wide_and_lets_ctrl_c_through():
    """The reference is traced in gradlab's own process, in one of `gradlab grade`'s threads: sys.stdout (and the
    warnings filters) are every thread's, and swapping them there lost a progress line the main thread printed
    ([3/10] missing from a class's log, found in a full run); a Ctrl-C there must stop gradlab, not the trace."""
    import sys
    import warnings
    from types import SimpleNamespace

    from gradlab.practice.judging import departure

    seen = {}

    def reference(x):
        seen["stdout"], seen["filters"] = sys.stdout, list(warnings.filters)
        if x is None:
            raise KeyboardInterrupt
        return x * 2

    checks = SimpleNamespace(reference=reference, call=lambda fn, case: fn(case["x"]))
    stdout, filters = sys.stdout, list(warnings.filters)
    assert departure.reference_trace(checks, {"x": torch.ones(3)}) is not None
    assert seen["stdout"] is stdout and seen["filters"] == filters
    with pytest.raises(KeyboardInterrupt):
        departure.reference_trace(checks, {"x": None})
