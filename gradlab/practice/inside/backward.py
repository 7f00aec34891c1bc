"""The first backward pass a function runs, caught as plain data: `gradlab check FILE --graph OUT.html`.

In the sandbox (this file is bound there, beside the child: it imports nothing of gradlab's and torch only when it
runs) catch() calls the harness on one input with torch.autograd.grad and torch.autograd.backward wrapped: the first
of them the code calls walks the graph of the tensor it differentiates, puts a hook on every node and lets the real
call run, so each node's arriving and sent gradients are the ones the submission's own backward computed. What comes
back is names, indices and tensors (gradlab/practice/inside/wire.py's format, never a pickle); checked() reads it in
gradlab's process as the untrusted data it is, and graph() makes it a gradlab.kit.autograd_graph.Graph to draw. The
reference runs through the same catch() in gradlab's process.
"""

from __future__ import annotations

import unicodedata

MOST_NODES = 600  # as gradlab.kit.autograd_graph.MAX_NODES: a graph nobody could read is not sent
MOST_EDGES = 4 * MOST_NODES
MOST_NUMBERS = 1 << 16  # a gradient larger than this is not sent (its node shows no numbers)
MOST_SLOTS = 64
NAME = 80  # characters of a node's name kept
WHERE = 160  # characters of a node's source line kept ("sgd_step.py:4  cost = ...")


class Caught:
    """A harness's CALL with the first backward pass of its first call caught (DATA: what catch() returned): the
    function's own (torch.autograd.grad inside it), or the one the harness runs on what the function returned (a
    loss, an autograd.Function class's output), so the graph is the submission's either way."""

    def __init__(self, call, case: dict, mine=None) -> None:
        self.call, self.case, self.mine, self.data = call, case, mine, None

    def __call__(self, fn, case: dict):
        out = []
        data = catch(lambda: out.append(self.call(fn, case)), self.case, self.mine)
        if self.data is None:
            self.data = data
        return out[0]


def catch(run, case: dict, mine=None) -> dict | None:
    """RUN() (the harness calling the function on CASE) with its first backward pass caught: {"nodes", "edges",
    "leaf_grads"} (see checked), or None when it ran none. MINE(filename): whether a file is the submission's; each
    node then keeps the line of it that made the node (the first such frame on the stack when the op ran). RUN's
    exceptions pass through."""
    import contextlib

    import torch

    caught: dict = {"lines": {}}
    real = {"grad": torch.autograd.grad, "backward": torch.autograd.backward}

    def wrapped(kind):
        def call(tensors, *args, **kwargs):
            roots = [t for t in (tensors if isinstance(tensors, list | tuple) else [tensors])
                     if isinstance(t, torch.Tensor) and t.grad_fn is not None]
            if "fns" in caught or not roots:
                return real[kind](tensors, *args, **kwargs)
            fns, edges, hooks, seen = _walk(roots[0].grad_fn)
            caught.update(fns=fns, edges=edges, seen=seen)
            try:
                out = real[kind](tensors, *args, **kwargs)
            finally:
                for h in hooks:
                    h.remove()
            inputs = kwargs.get("inputs", args[0] if kind == "grad" and args else None)
            caught["grads"] = _leaf_grads(kind, fns, inputs, out)
            return out
        return call

    torch.autograd.grad, torch.autograd.backward = wrapped("grad"), wrapped("backward")
    try:
        with _lines(mine, caught["lines"]) if mine else contextlib.nullcontext():
            run()
    finally:
        torch.autograd.grad, torch.autograd.backward = real["grad"], real["backward"]
    if "fns" not in caught:
        return None
    return _plain(caught, case)


def _lines(mine, lines: dict):
    """A TorchFunctionMode that keeps, for each grad_fn an op makes, where in the submission's file it was made:
    "sgd_step.py:4  cost = -(y * z).sum()" (the first frame on the stack of a file MINE says is the submission's),
    for at most 4 × MOST_NODES nodes."""
    import linecache
    import os
    import sys

    import torch
    from torch.overrides import TorchFunctionMode

    def where() -> str:
        frame = sys._getframe(2)
        while frame is not None and not mine(frame.f_code.co_filename):
            frame = frame.f_back
        if frame is None:
            return ""
        path, line = frame.f_code.co_filename, frame.f_lineno
        return f"{os.path.basename(path)}:{line}  {linecache.getline(path, line).strip()}"[:WHERE]

    class Lines(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            made = [t.grad_fn for t in (out if isinstance(out, list | tuple) else [out])
                    if isinstance(t, torch.Tensor) and t.grad_fn is not None and t.grad_fn not in lines]
            if made and len(lines) < 4 * MOST_NODES:
                here = where()
                lines.update((fn, here) for fn in made)
            return out

    return Lines()


def _walk(root):
    """Every node reachable from ROOT (breadth first), the edges [src, dst, slot], a hook on each operation."""
    fns, index, edges, queue, seen = [root], {root: 0}, [], [root], {}
    while queue and len(fns) <= MOST_NODES:
        fn = queue.pop(0)
        for slot, (nxt, _) in enumerate(fn.next_functions):
            if nxt is None:
                continue
            if nxt not in index:
                index[nxt] = len(fns)
                fns.append(nxt)
                queue.append(nxt)
            edges.append([index[fn], index[nxt], slot])

    def hook_for(i: int):
        def hook(sent, arrived):
            seen[i] = (len(seen), arrived[0], list(sent))
        return hook

    hooks = [fn.register_hook(hook_for(i)) for i, fn in enumerate(fns) if not hasattr(fn, "variable")]
    return fns, edges, hooks, seen


def _leaf_grads(kind: str, fns: list, inputs, out) -> dict:
    """A leaf node's index → the gradient the call gave it: autograd.grad's result for its inputs, .grad after
    backward."""
    grads = {}
    for i, fn in enumerate(fns):
        variable = getattr(fn, "variable", None)
        if variable is None:
            continue
        if kind == "grad":
            given = list(inputs) if isinstance(inputs, list | tuple) else [inputs]
            at = next((k for k, t in enumerate(given) if t is variable), None)
            grads[i] = out[at] if at is not None and at < len(out) else None
        else:
            grads[i] = variable.grad
    return grads


def _small(t):
    return None if t is None or t.numel() > MOST_NUMBERS else t.detach().clone()


def _inputs(case: dict):
    """CASE's tensors by name: "W", and "online[2]" for the third of a list of them (a network's weights)."""
    import torch

    for k, v in case.items():
        if isinstance(v, torch.Tensor):
            yield k, v
        elif isinstance(v, list | tuple):
            yield from ((f"{k}[{j}]", t) for j, t in enumerate(v) if isinstance(t, torch.Tensor))


def _plain(caught: dict, case: dict) -> dict:
    import torch

    nodes = []
    for i, fn in enumerate(caught["fns"]):
        variable = getattr(fn, "variable", None)
        order, arrived, sent = caught["seen"].get(i, (None, None, []))
        label = ""
        if variable is not None:  # a leaf: named after the input it equals ("W", "online[2]"), as the harness made it
            label = next((k for k, v in _inputs(case) if v.shape == variable.shape
                          and torch.equal(v.to(variable.dtype), variable.detach())), "")
        nodes.append({"name": type(fn).__name__[:NAME], "leaf": variable is not None, "label": label,
                      "where": caught["lines"].get(fn, ""),
                      "shape": list(variable.shape) if variable is not None else None, "order": order,
                      "grad_in": _small(caught["grads"].get(i) if variable is not None else arrived),
                      "grads_out": [_small(g) for g in sent[:MOST_SLOTS]]})
    return {"nodes": nodes, "edges": caught["edges"][:MOST_EDGES]}


# ---------------------------------------------------------------------------------------------------------------
# In gradlab's process: what came back, checked, and made a Graph.
# ---------------------------------------------------------------------------------------------------------------

class Bad(Exception):
    """What came back is not a caught backward pass: the message says what is wrong."""


def _text(value, most: int) -> str:
    if type(value) is not str:
        raise Bad(f"a name is {type(value).__name__}, not text")
    return "".join(c for c in value[:most] if unicodedata.category(c)[0] not in "CZ" or c == " ")


def _tensor(value):
    import torch

    if value is None:
        return None
    if type(value) is not torch.Tensor or value.numel() > MOST_NUMBERS or not value.is_floating_point():
        raise Bad("a gradient is not a tensor of floating-point numbers")
    return value


def checked(data) -> dict | None:
    """DATA, what the submission's process sent as its caught backward pass, checked: plain lists and dicts of the
    sizes and kinds catch() makes, every name cut to printable text, every index in range. Raises Bad."""
    if data is None:
        return None
    if type(data) is not dict or set(data) != {"nodes", "edges"} or type(data["nodes"]) is not list \
            or type(data["edges"]) is not list:
        raise Bad("it is not {nodes, edges}")
    if not 0 < len(data["nodes"]) <= MOST_NODES + 1 or len(data["edges"]) > MOST_EDGES:
        raise Bad(f"it has {len(data['nodes'])} nodes and {len(data['edges'])} edges")
    nodes = []
    for node in data["nodes"]:
        if type(node) is not dict or set(node) != {"name", "leaf", "label", "where", "shape", "order", "grad_in",
                                                   "grads_out"}:
            raise Bad("a node is not what catch() sends")
        shape, order, outs = node["shape"], node["order"], node["grads_out"]
        if not (shape is None or (type(shape) is list and len(shape) <= 8 and all(type(n) is int and 0 <= n < 1 << 40
                                                                                   for n in shape))):
            raise Bad("a node's shape is not a list of sizes")
        if not (order is None or (type(order) is int and 0 <= order <= MOST_NODES)) or type(node["leaf"]) is not bool:
            raise Bad("a node's order or kind is not a number or a flag")
        if type(outs) is not list or len(outs) > MOST_SLOTS:
            raise Bad("a node's sent gradients are not a short list")
        nodes.append({"name": _text(node["name"], NAME) or "?", "leaf": node["leaf"], "label": _text(node["label"], 40),
                      "where": _text(node["where"], WHERE),
                      "shape": shape, "order": order, "grad_in": _tensor(node["grad_in"]),
                      "grads_out": [_tensor(g) for g in outs]})
    edges = []
    for edge in data["edges"]:
        if not (type(edge) is list and len(edge) == 3 and all(type(v) is int for v in edge)
                and 0 <= edge[0] < len(nodes) and 0 <= edge[1] < len(nodes) and 0 <= edge[2] < MOST_SLOTS):
            raise Bad("an edge is not [from, to, slot] within the graph")
        edges.append(edge)
    return {"nodes": nodes, "edges": edges}


def graph(data: dict, title: str, note: str = ""):
    """DATA (checked) as a gradlab.kit.autograd_graph.Graph, to draw."""
    from gradlab.kit.autograd_graph import Edge, Forward, Graph, Node
    from gradlab.kit.text import sanitize

    def forward(n: dict):  # what the page's panel and the box show of the forward: the student's line
        where = sanitize(n["where"], WHERE)
        return Forward(shape=tuple(n["shape"] or ()), value="", where=where) if where else None

    nodes = [Node(id=i, name=n["name"], leaf=n["leaf"], label=n["label"] or (f"leaf {i}" if n["leaf"] else ""),
                  forward=forward(n),
                  order=n["order"], grad_in=n["grad_in"], grads_out=list(n["grads_out"]),
                  shape=tuple(n["shape"]) if n["shape"] is not None else
                  tuple(n["grad_in"].shape) if n["grad_in"] is not None else None)
             for i, n in enumerate(data["nodes"])]
    return Graph(title=title, nodes=nodes, edges=[Edge(s, d, k) for s, d, k in data["edges"]], seed="1",
                 leaf_grads={n.id: n.grad_in for n in nodes if n.leaf}, note=note)


def first_difference(student, reference) -> None:
    """Mark the student's first node, in the order autograd ran them (then the leaves), whose arriving gradient
    differs from the reference's at the same op: each is paired with the reference's first unpaired node of the same
    name and gradient shape (the two graphs may build the same cost from other ops). Each graph's note says where."""
    import torch

    def ordered(g):
        return sorted((n for n in g.nodes if n.order is not None), key=lambda n: n.order) + \
            [n for n in g.nodes if n.leaf]

    def shape(n):
        return None if n.grad_in is None else tuple(n.grad_in.shape)

    free = ordered(reference)
    for mine in ordered(student):
        theirs = next((r for r in free if r.name == mine.name and shape(r) == shape(mine)
                       and (not mine.leaf or r.label == mine.label)), None)
        if theirs is None:
            continue
        free.remove(theirs)
        if mine.grad_in is None or torch.allclose(mine.grad_in.double(), theirs.grad_in.double(), rtol=1e-4,
                                                  atol=1e-6, equal_nan=True):
            continue
        diff = float((mine.grad_in.double() - theirs.grad_in.double()).abs().max())
        why = f"its gradient differs from the reference's {theirs.name} #{theirs.id} by up to {diff:.3g}"
        mine.facts.append(f"≠ {why}")
        theirs.facts.append(f"≠ the reference's gradient here; yours is #{mine.id}")
        student.note = f"look at: {mine.label or mine.name} (#{mine.id}), the first node whose gradient differs: {why}"
        reference.note = f"look at: {theirs.label or theirs.name} (#{theirs.id}), where yours differs"
        return
    student.note = "look at: every node's gradient matches the reference's at the same op"
    reference.note = "look at: the same ops as yours, the same gradients"
