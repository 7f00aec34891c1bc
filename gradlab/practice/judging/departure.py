"""The student's line where a value first departs from every value a right answer computes (#45, point 2).

The sandbox traced the submission's own torch operations on its inputs (gradlab/practice/inside/trace.py: each
operation's line, its value, which earlier values its arguments are). Here, in gradlab's process, the reference is
traced on the first failing input the same way; its intermediates, the input's tensors and the expected outputs are
the values "a right answer computes there". A student's value matches when one of those has the same values (the
same shape, or that shape transposed or with its size-1 dimensions squeezed; within the check's tolerance, relative
to that value's largest entry: an absolute tolerance would match every small value with every other).

A departure is a student's operation (not a constant such as zeros_like, not a write into a buffer) whose value
matches none, whose traced arguments all match (the rest are inputs), that lies on the way to a wrong output, from
which no matched value follows on any way (a student's own route, exp(z - max) then a division, rejoins the
reference's at the probabilities: it is no departure), and whose arguments do not broadcast into more values than
they hold. Its line is said only when the trace is complete, every departure is on that one line, the reference
computes values of its shape, the reference combines the same argument values into a value of that shape in one of
its own operations (else a right value was used where another belongs, a step the trace cannot see), no later
operation brings in a value the reference brings in before that point (the steps in another order: reordered()),
and every Python number taken from a value that differs follows from it. Never for what runs on gloo workers or in an
autograd.Function of the student's (the sandbox does not trace those), nor for the exercises in OFF.
"""

from __future__ import annotations

import torch

from gradlab.kit.exercise import tensors
from gradlab.practice.inside.trace import Tracer, everywhere, written

MOST_REFERENCE_S = 5.0  # seconds of tracing the reference on one input
MOST_REFERENCE_OPS = 5000  # values recorded
MOST_REFERENCE_VALUES = 4_000_000  # numbers copied (twice that in float64 while matching: at most 64 MB)
# Exercises where the rule says nothing, and why (measured: scripts/departure_figures.py, docs/teach/practice.md)
OFF = {"clip_graded.clip_by_norm": "its mistakes are in which dimensions a norm reduces over, computed in Python from "
                                   "axes, which no trace of torch operations sees: the line that reduces is named, "
                                   "not the line that chose its dimensions"}


class Pool:
    """The values a right answer computes on one input, grouped by their shape with size-1 dimensions squeezed (2-D
    ones under their transpose's too), each group stacked once, compared at once."""

    def __init__(self, values: list, tolerance: float) -> None:
        self.tolerance = tolerance
        groups: dict[tuple, list] = {}
        for v in values:
            if not isinstance(v, torch.Tensor) or v.is_complex() or not v.numel():
                continue
            v = v.detach().to(torch.float64).squeeze()
            groups.setdefault(tuple(v.shape), []).append(v.reshape(-1))
            if v.dim() == 2:
                groups.setdefault(tuple(v.T.shape), []).append(v.T.reshape(-1))
        self.groups = {k: torch.stack(vs) for k, vs in groups.items()}

    def shaped(self, value) -> bool:
        """Whether the pool holds any value of VALUE's shape (squeezed): a value a right answer computes is there to
        compare it with (a student's route of other shapes, such as a scalar where none is computed, is not)."""
        return tuple(value.squeeze().shape) in self.groups

    def has(self, value) -> bool:
        """Whether VALUE (a tensor) is one of the pool's values, within the tolerance."""
        if value is None or not value.numel():
            return True  # nothing to compare: no departure can be seen in it
        v = value.detach().to(torch.float64).squeeze()
        group = self.groups.get(tuple(v.shape))
        if group is None:
            return False
        v = v.reshape(-1)
        gap = (group - v).abs()
        gap = torch.where(group.isnan() & v.isnan(), torch.zeros_like(gap), gap)
        scale = group.nan_to_num(0.0, 0.0, 0.0).abs().amax(dim=1).clamp(min=1e-30)
        return bool((gap.amax(dim=1) <= self.tolerance * scale).any())


def reference_trace(checks, case: dict) -> list | None:
    """The reference's call on CASE traced, every operation (the harness's too), or None where it cannot be traced
    completely."""
    if getattr(checks, "reference", None) is None:
        return None
    tracer = Tracer(everywhere, most_ops=MOST_REFERENCE_OPS, most_values=MOST_REFERENCE_VALUES,
                    most_s=MOST_REFERENCE_S)
    got = tracer.run(lambda: checks.call(checks.reference, case), untrusted=False)  # ours: nothing swallowed
    return got["nodes"] if got["complete"] else None


def candidates(nodes: list[dict], matched: list[bool], sinks: set[int]) -> list[int]:
    """The departures of a trace whose nodes' MATCHED is known: see the module's docstring. SINKS: the nodes whose
    value is a wrong output (or, where none is traced, the autograd nodes that carry a value to one)."""
    n = len(nodes)
    children: list[list[int]] = [[] for _ in range(n)]
    for i, node in enumerate(nodes):
        for a in node["args"]:
            if 0 <= a < i:
                children[a].append(i)
    reach = [False] * n  # on the way to a wrong output: it is one, or one follows from it
    rejoins = [False] * n  # a matched value follows from it, on any way (its value is then a route's step)
    for i in range(n - 1, -1, -1):
        reach[i] = i in sinks or any(reach[c] for c in children[i])
        rejoins[i] = any((nodes[c]["value"] is not None and matched[c]) or rejoins[c] for c in children[i])
    found = [i for i, node in enumerate(nodes)
             if node["kind"] == "value" and node["inputs"] > 0 and not matched[i] and reach[i] and not rejoins[i]
             and not written(node["op"]) and all(a >= 0 and matched[a] for a in node["args"])
             and not _spreads(nodes, node)]
    escaped = [i for i, node in enumerate(nodes) if node["kind"] == "escape" and not matched[i]]
    return [c for c in found if all(c in _ancestors(nodes, e) for e in escaped)]


def _spreads(nodes: list[dict], node: dict) -> bool:
    """Whether NODE's traced arguments broadcast to more values than the largest of them holds ((N, 1) with (N,):
    (N, N)): the values then depart where a shape was made, which is the shape diagnosis's to say."""
    shapes = [tuple(nodes[a]["value"].shape) for a in node["args"] if nodes[a]["value"] is not None]
    try:
        spread = torch.Size(torch.broadcast_shapes(*shapes)).numel() if len(shapes) > 1 else 0
    except RuntimeError:  # not an elementwise operation (a matrix product)
        return False
    return spread > max((torch.Size(s).numel() for s in shapes), default=0)


def _ancestors(nodes: list[dict], i: int) -> set[int]:
    seen, todo = set(), [i]
    while todo:
        j = todo.pop()
        for a in nodes[j]["args"]:
            if a >= 0 and a not in seen:
                seen.add(a)
                todo.append(a)
    return seen


def matches(nodes: list[dict], pool: Pool) -> list[bool]:
    """Each node's value in POOL; a node without a value (backward, a Python number taken) matches when all its
    arguments do; a constant made from no tensor (torch.zeros) matches."""
    out: list[bool] = []
    for node in nodes:
        if node["inputs"] == 0:
            out.append(True)
        elif node["value"] is None:
            out.append(all(a >= 0 and out[a] for a in node["args"]))
        else:
            out.append(pool.has(node["value"]))
    return out


def sinks(nodes: list[dict], wrong: list) -> set[int]:
    """The nodes whose value is one of the WRONG outputs (exactly), else every autograd node (a gradient read, a
    backward: what the harness then reads as the output)."""
    found = set()
    for i, node in enumerate(nodes):
        v = node["value"]
        if v is not None and any(v.shape == w.shape and v.dtype == w.dtype and torch.equal(v, w) for w in wrong):
            found.add(i)
    return found or {i for i, node in enumerate(nodes) if node["kind"] == "autograd"}


def departure(checks, cases: list[dict], mine: list[dict], refs: list[dict], passed: list[bool], bounds: list[float],
              traced: list | None, suppose_wrong: bool = False, exercise: str = "") -> str:
    """The sentence for the first failing input's trace, or "" (see the module's docstring); EXERCISE: its name (the
    rule is OFF for a few). SUPPOSE_WRONG: every output of that input taken for wrong (how
    scripts/departure_figures.py runs right answers through the rule)."""
    failing = [i for i, p in enumerate(passed) if not p]
    if not failing or not traced or exercise in OFF:
        return ""
    i = failing[0]
    trace = next((t for t in traced if t.get("input") == i), None)
    if trace is None or not trace.get("complete") or not trace.get("nodes"):
        return ""
    wrong = [m for m, r in zip(tensors(mine[i]), tensors(refs[i]), strict=False)
             if m.shape == r.shape and (suppose_wrong or not _close(m, r, bounds[i]))]
    if not wrong or any(m.is_floating_point() and not bool(m.isfinite().all()) for m in tensors(mine[i])):
        return ""  # a NaN or an inf: the first non-finite value's line is said instead
    theirs = reference_trace(checks, cases[i])
    found = departing_line(trace["nodes"], theirs, _case_tensors(cases[i]), wrong, bounds[i], tensors(refs[i])) \
        if theirs is not None else None
    if found is None:
        return ""
    return (f"where your values first depart (measured on '{cases[i]['label']}', each torch operation of your file "
            f"traced beside the reference's): your line {found[0]} `{found[1]}` computes a value that matches none a "
            "right answer computes there, from inputs that all match")


def departing_line(nodes: list[dict], theirs: list[dict], known: list, wrong: list, tolerance: float,
                   finals: list = ()) -> tuple[int, str] | None:
    """(line, code) of the one line where the student's trace NODES departs from the reference's trace THEIRS (with
    the KNOWN values, the input's tensors, and the expected outputs FINALS), the WRONG outputs' way, within
    TOLERANCE; None when no line or more than one is found, or when the reference never combines what that line's
    operations take."""
    pool = Pool([n["value"] for n in theirs if n["value"] is not None] + list(known) + list(finals), tolerance)
    matched = matches(nodes, pool)
    found = candidates(nodes, matched, sinks(nodes, wrong))
    lines = {(nodes[c]["line"], nodes[c]["code"]) for c in found}
    if len(lines) != 1 or not all(pool.shaped(nodes[c]["value"]) and combined(nodes, nodes[c], theirs, tolerance,
                                                                     finals)
                                  and not reordered(nodes, c, matched, theirs, tolerance) for c in found):
        return None
    return lines.pop()


def reordered(nodes: list[dict], c: int, matched: list[bool], theirs: list[dict], tolerance: float) -> bool:
    """Whether an operation after C brings in a right value W that the reference brings in before the operation that
    takes C's arguments (y = r + γ·max Q, then y · (1 − done), where the reference masks max Q itself): the student's
    steps are the reference's in another order, and C's line need not be where the mistake is."""
    later = _descendants(nodes, c)
    brought = [nodes[a]["value"] for d in later for a in nodes[d]["args"]
               if a >= 0 and a != c and a not in later and matched[a] and nodes[a]["inputs"] > 0
               and nodes[a]["value"] is not None]
    taken = [nodes[a]["value"] for a in nodes[c]["args"] if a >= 0 and nodes[a]["value"] is not None]
    if not brought or not taken:
        return False
    for k, op in enumerate(theirs):
        same = [a for a in op["args"] if a >= 0 and theirs[a]["value"] is not None
                and any(_same(t, theirs[a]["value"], tolerance) for t in taken)]
        if not same:
            continue
        upstream = set().union(*(_ancestors(theirs, a) | {a} for a in same))  # what C's arguments come from
        before = [theirs[a]["value"] for a in _ancestors(theirs, k) - upstream if theirs[a]["value"] is not None]
        if any(_same(w, b, tolerance) for w in brought for b in before):
            return True
    return False


def _descendants(nodes: list[dict], c: int) -> set[int]:
    found = {c}
    for i in range(c + 1, len(nodes)):
        if any(a in found for a in nodes[i]["args"]):
            found.add(i)
    return found - {c}


def combined(nodes: list[dict], node: dict, theirs: list[dict], tolerance: float, finals: list = ()) -> bool:
    """Whether the reference combines the values NODE's traced arguments hold in one of its own operations (THEIRS),
    all of them at once, into a value of NODE's shape (squeezed): the student's operation stands where that one
    does. A right value
    taken where another belongs (an intermediate used before its last step, an index for a value, one row for
    another) is not: the value departed on an earlier line, which the trace cannot see. A right output (FINALS)
    changed afterwards is."""
    mine = [nodes[a]["value"] for a in node["args"] if nodes[a]["value"] is not None]
    if not mine:
        return True  # computed from the inputs alone: this line is where it departs
    if len(mine) == 1 and any(_same(mine[0], f, tolerance) for f in finals):
        return True  # the right output, changed afterwards
    shape = tuple(node["value"].squeeze().shape)
    for op in theirs:
        if op["value"] is None or tuple(op["value"].squeeze().shape) != shape:
            continue
        given = [theirs[a]["value"] for a in op["args"] if a >= 0 and theirs[a]["value"] is not None]
        if given and all(any(_same(m, g, tolerance) for g in given) for m in mine):
            return True
    return False


def _same(a, b, tolerance: float) -> bool:
    """A and B hold the same values (B's shape, or it squeezed or transposed), within TOLERANCE of B's largest."""
    if a.numel() != b.numel():
        return False
    return Pool([b], tolerance).has(a)


def _close(a, b, bound: float) -> bool:
    a, b = a.detach().to(torch.float64), b.detach().to(torch.float64)
    return bool(((a - b).abs().amax() <= bound * max(1.0, float(b.abs().amax()))) if a.numel() else True)


def _case_tensors(case: dict) -> list:
    found = []
    for v in case.values():
        if isinstance(v, torch.Tensor):
            found.append(v)
        elif isinstance(v, list | tuple):
            found += [t for t in v if isinstance(t, torch.Tensor)]
    return found
