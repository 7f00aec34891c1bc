"""The sandbox's trace of a submission's operations (gradlab/practice/inside/trace.py), checked before gradlab reads it.

It comes from the submission's process, so it is untrusted like every other part of what comes back: a list of at most
one trace per input, at most MOST_OPS nodes and MOST_VALUES numbers in all; each node's line a number, its code and
operation's name sanitized text of bounded length, its arguments earlier nodes only, its value a plain CPU tensor of a
real dtype owning no more storage than it needs. A trace that breaks any of this is dropped whole (the check goes
on without it: the trace only ever adds a sentence, so dropping it can change no grade)."""

from __future__ import annotations

import math

from gradlab.kit.text import one_line
from gradlab.practice.inside.trace import MOST_ARGS, MOST_OPS, MOST_VALUES

KINDS = ("value", "autograd", "escape")
REAL = ("float16", "bfloat16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool")


class _Bad(Exception):
    pass


def checked(value, inputs: int) -> tuple | None:
    """VALUE, the child's "traced", as a tuple of {"input", "complete", "nodes"} (one per input at most, of INPUTS),
    every part checked and its text sanitized; None when any part is not what the child sends."""
    try:
        return _checked(value, inputs)
    except _Bad:
        return None


def _checked(value, inputs: int) -> tuple:
    if type(value) is not list or len(value) > inputs:
        raise _Bad
    budget = {"ops": MOST_OPS, "values": MOST_VALUES}
    out, seen = [], set()
    for trace in value:
        if type(trace) is not dict or set(trace) != {"input", "complete", "nodes"}:
            raise _Bad
        i, complete, nodes = trace["input"], trace["complete"], trace["nodes"]
        if type(i) is not int or not 0 <= i < inputs or i in seen or type(complete) is not bool \
                or type(nodes) is not list:
            raise _Bad
        seen.add(i)
        budget["ops"] -= len(nodes)
        if budget["ops"] < 0:
            raise _Bad
        out.append({"input": i, "complete": complete, "nodes": [_node(n, k, budget) for k, n in enumerate(nodes)]})
    return tuple(out)


def _node(node, k: int, budget: dict) -> dict:
    keys = {"line", "code", "op", "args", "inputs", "kind", "value"}
    if type(node) is not dict or set(node) != keys:
        raise _Bad
    line, args, inputs, kind = node["line"], node["args"], node["inputs"], node["kind"]
    if type(line) is not int or not 0 <= line < 10**7 or type(inputs) is not int or not 0 <= inputs <= 10**6:
        raise _Bad
    if kind not in KINDS or type(node["code"]) is not str or type(node["op"]) is not str:
        raise _Bad
    if type(args) is not list or len(args) > MOST_ARGS or any(type(a) is not int or not -1 <= a < k for a in args):
        raise _Bad
    return {"line": line, "code": one_line(node["code"][:400], 120), "op": one_line(node["op"][:200], 60),
            "args": args, "inputs": inputs, "kind": kind, "value": _value(node["value"], budget)}


def _value(value, budget: dict):
    import torch

    if value is None:
        return None
    if type(value) is not torch.Tensor or value.layout != torch.strided or value.device.type != "cpu" \
            or str(value.dtype).removeprefix("torch.") not in REAL or value.dim() > 8:
        raise _Bad
    numel = math.prod(value.shape)
    budget["values"] -= numel
    if budget["values"] < 0 or value.untyped_storage().nbytes() > value.element_size() * numel + 4096:
        raise _Bad
    return value.detach().clone(memory_format=torch.contiguous_format)
