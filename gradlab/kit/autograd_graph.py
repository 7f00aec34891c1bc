"""The real autograd graph of a tensor, measured: walk `grad_fn` after a real backward pass and keep, per node, the
name PyTorch gives it (`AddmmBackward0`, ...), the gradient that arrived there and the ones it sent on (node hooks),
the order autograd ran it in, and, when the forward ran under record(), the shape and values it produced and where a
cut (`detach`, `no_grad`) fed it a constant.

    with autograd_graph.record():          # optional: values, source lines and cuts of the forward pass
        loss = td_loss(online, target, batch, gamma, "no-stop-grad")
    g = autograd_graph.trace(loss, title="TD loss", names={"online": online, "target": target},
                             forbidden=("target",))

Nothing here prints or draws: gradlab.report.graph does. The backward pass is torch.autograd.grad on the leaves
(retain_graph=True), so no `.grad` is touched and the caller may still call backward.
"""

from __future__ import annotations

import dataclasses
import linecache
import math
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

from gradlab.errors import GradlabError, check

KEY = "gradlab"  # the key of what record() keeps in a node's metadata dict
MAX_NODES = 600  # larger graphs take grandalf minutes to lay out, and nobody reads them
SMALL = 64  # forward inputs up to this many elements are kept, so gradlab step can show the local derivative


@dataclass(frozen=True)
class Cut:
    """A constant fed into the graph where a gradient would otherwise have flowed."""

    why: str  # "detach" or "no_grad"
    where: str  # the source line that made the constant: "lesson.py:163  y = y.detach()"


@dataclass(frozen=True)
class Forward:
    """What record() saw a node's forward produce."""

    shape: tuple[int, ...]
    value: str  # a summary (gradlab.kit.autograd_graph.summary)
    where: str  # the source line outside torch that called the op
    inputs: tuple[torch.Tensor | None, ...] = ()  # small tensor inputs, detached (None: large or not a tensor)
    output: torch.Tensor | None = None  # the output, detached, when small
    cuts: tuple[Cut, ...] = ()


@dataclass
class Node:
    """One node of the backward graph."""

    id: int  # its index in Graph.nodes (0: the output's grad_fn)
    name: str  # as PyTorch names it: type(grad_fn).__name__
    forward: Forward | None = None  # None when the forward did not run under record()
    label: str = ""  # a leaf's parameter name ("0.weight"), or "" for an operation
    group: str = ""  # a leaf's group in the names map ("online", "target"), or ""
    leaf: bool = False  # an AccumulateGrad: a tensor the gradient is for
    order: int | None = None  # when autograd ran it (0 first); None: not run
    grad_in: torch.Tensor | None = None  # the gradient that arrived (∂out/∂ this node's output), summed over uses
    grads_out: list[torch.Tensor | None] = field(default_factory=list)  # what it sent to each next node
    shape: tuple[int, ...] | None = None  # of the tensor it produced (from its arriving gradient or forward)
    value: str = ""  # a summary of that tensor, where known
    outside: bool = False  # a step after backward, outside autograd, on the leaves' gradients (clip, all-reduce)
    facts: list[str] = field(default_factory=list)  # what the lesson measured here, one line each
    part: str = ""  # which of the joined graphs it came from ("rank 0"), or ""

    @property
    def finite(self) -> bool:
        """Whether every gradient it sent on is finite."""
        return all(g is None or bool(torch.isfinite(g).all()) for g in self.grads_out)


@dataclass(frozen=True)
class Edge:
    """The gradient flowing from node SRC (nearer the output) to node DST (nearer the inputs)."""

    src: int
    dst: int
    slot: int  # which of SRC's inputs (its next_functions index)
    forbidden: bool = False  # on a path into a forbidden group (a gradient the lesson says must not flow)


@dataclass
class Graph:
    """The measured backward graph of one output."""

    title: str
    nodes: list[Node]
    edges: list[Edge]
    seed: str  # the gradient backward started from: "1" for a scalar, "ones" for a tensor
    leaf_grads: dict[int, torch.Tensor]  # a leaf's node id → the gradient autograd returned for it
    forbidden: dict[str, float] = field(default_factory=dict)  # group → ‖∇‖ of its leaves, when gradient flows in
    note: str = ""  # what the reader should look at
    output: torch.Tensor | None = None  # the tensor traced (its graph retained: a real backward may follow)
    variables: dict[int, torch.Tensor] = field(default_factory=dict)  # a leaf's node id → the tensor itself

    @property
    def first_nonfinite(self) -> Node | None:
        """The first node, in the order autograd ran them, that received finite gradients and sent a non-finite
        one: where a NaN or inf is born."""
        ran = sorted((n for n in self.nodes if n.order is not None), key=lambda n: n.order)
        for n in ran:
            if not n.finite and (n.grad_in is None or bool(torch.isfinite(n.grad_in).all())):
                return n
        return None

    @property
    def cuts(self) -> list[tuple[Node, Cut]]:
        return [(n, c) for n in self.nodes if n.forward for c in n.forward.cuts]

    def incoming(self, node: Node) -> list[Edge]:
        return [e for e in self.edges if e.dst == node.id]

    def edge_grad(self, e: Edge) -> torch.Tensor | None:
        outs = self.nodes[e.src].grads_out
        return outs[e.slot] if e.slot < len(outs) else None

    def outgoing(self, node: Node) -> list[Edge]:
        return [e for e in self.edges if e.src == node.id]

    def named_grads(self, group: str = "") -> dict[str, torch.Tensor]:
        """The gradient autograd returned for each leaf of GROUP, by its name ("0.weight"; "" for lone tensors)."""
        return {self.nodes[i].label: g for i, g in self.leaf_grads.items() if self.nodes[i].group == group}

    def group_norm(self, group: str) -> float:
        """‖∇‖ over every leaf of GROUP (0 when none received a gradient)."""
        squares = [float(g.double().pow(2).sum()) for i, g in self.leaf_grads.items()
                   if self.nodes[i].group == group and g is not None]
        return math.sqrt(sum(squares))


# ---------------------------------------------------------------------------------------------------------------
# Summaries of tensors, short enough for a box in a drawing.
# ---------------------------------------------------------------------------------------------------------------

def summary(t: torch.Tensor | None, limit: int = 4) -> str:
    """'0.5' for a scalar, '[0.1, -2, 3]' for up to LIMIT numbers, else 'mean 0.1 · ‖·‖ 3.2 · 2 non-finite'."""
    if t is None:
        return ""
    t = t.detach()
    if not t.is_floating_point():
        return "[" + ", ".join(str(int(v)) for v in t.flatten()[:limit].tolist()) + (", …]" if t.numel() > limit
                                                                                     else "]")
    flat = t.double().flatten().cpu()
    if flat.numel() == 1:
        return f"{flat.item():.4g}"
    if flat.numel() <= limit:
        return "[" + ", ".join(f"{v:.3g}" for v in flat.tolist()) + "]"
    bad = int((~torch.isfinite(flat)).sum())
    ok = flat[torch.isfinite(flat)]
    mean = ok.mean().item() if ok.numel() else 0.0
    if abs(mean) <= 1e-6 * (ok.abs().max().item() if ok.numel() else 0.0):
        mean = 0.0  # rounding noise where the exact mean is 0 (a softmax's gradient, centred): not a value
    text = f"mean {mean:.3g} · ‖·‖ {ok.norm().item():.3g}" if ok.numel() else "all non-finite"
    return text + (f" · {bad} non-finite" if bad else "")


def norm(t: torch.Tensor | None) -> float:
    """‖t‖ in float64 (nan when it holds a NaN, 0 for None)."""
    return 0.0 if t is None else float(t.detach().double().norm())


# ---------------------------------------------------------------------------------------------------------------
# record(): the forward pass, seen through a TorchFunctionMode.
# ---------------------------------------------------------------------------------------------------------------

_HERE = (str(Path(__file__)), str(Path(torch.__file__).parent))


def _caller() -> str:
    """The first frame outside torch and this module: "lesson.py:163  y = y.detach()"."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_HERE):
        frame = frame.f_back
    if frame is None:
        return ""
    path, line = frame.f_code.co_filename, frame.f_lineno
    return f"{Path(path).name}:{line}  {linecache.getline(path, line).strip()}"


def _tensors(value) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, tuple | list):
        for v in value:
            yield from _tensors(v)


class _Recorder(TorchFunctionMode):
    """Labels each new grad_fn with its Forward, and remembers the constants that detach and no_grad make."""

    def __init__(self):
        super().__init__()
        self.constants: dict[int, tuple[torch.Tensor, Cut]] = {}  # id → (the tensor, kept alive; its cut)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = list(_tensors(list(args) + list((kwargs or {}).values())))
        # a constant that requires grad again is none: a custom Function's forward runs under no_grad, and its
        # output then gets the Function's grad_fn
        cuts = tuple(dict.fromkeys(self.constants[id(t)][1] for t in inputs
                                   if id(t) in self.constants and not t.requires_grad))
        name = getattr(func, "__name__", "")
        for t in _tensors(out):
            if t.grad_fn is not None:
                if KEY not in t.grad_fn.metadata:
                    t.grad_fn.metadata[KEY] = self._forward(t, inputs, cuts)
            elif t.is_floating_point() and (cut := self._cut(name, inputs, cuts)):  # a constant made from the graph
                self.constants[id(t)] = (t, cut)
        return out

    @staticmethod
    def _cut(name: str, inputs: list[torch.Tensor], cuts: tuple[Cut, ...]) -> Cut | None:
        """Why a new tensor without grad_fn is a cut: detach, no_grad, or made from such a constant (a mask from a
        comparison is none: no gradient flows through a comparison anyway)."""
        if any(i.requires_grad for i in inputs):
            if name == "detach":
                return Cut("detach", _caller())
            if not torch.is_grad_enabled():
                return Cut("no_grad", _caller())
        return cuts[0] if cuts else None

    @staticmethod
    def _forward(t: torch.Tensor, inputs: list[torch.Tensor], cuts: tuple[Cut, ...]) -> Forward:
        small = tuple(i.detach().clone() if i.numel() <= SMALL else None for i in inputs)
        return Forward(shape=tuple(t.shape), value=summary(t), where=_caller(), inputs=small,
                       output=t.detach().clone() if t.numel() <= SMALL else None, cuts=cuts)


@contextmanager
def record():
    """Run a forward pass under this to keep each node's values, source line and cuts (see Forward)."""
    with _Recorder():
        yield


# ---------------------------------------------------------------------------------------------------------------
# trace(): walk the graph, run the backward pass with hooks, keep what they saw.
# ---------------------------------------------------------------------------------------------------------------

def _named_leaves(names: dict[str, object] | None) -> dict[int, tuple[str, str]]:
    """id(tensor) → (group, name) from {"online": module, "x": tensor, ...}."""
    out: dict[int, tuple[str, str]] = {}
    for group, thing in (names or {}).items():
        if isinstance(thing, torch.nn.Module):
            out.update({id(p): (group, n) for n, p in thing.named_parameters()})
        elif isinstance(thing, torch.Tensor):
            out[id(thing)] = ("", group)
    return out


def _walk(root) -> tuple[list, list[Edge]]:
    """Every node reachable from ROOT (breadth first) and the edges between them."""
    fns, index, edges, queue = [root], {root: 0}, [], [root]
    while queue:
        fn = queue.pop(0)
        for slot, (nxt, _) in enumerate(fn.next_functions):
            if nxt is None:
                continue  # an input that needs no gradient
            if nxt not in index:
                index[nxt] = len(fns)
                fns.append(nxt)
                queue.append(nxt)
            edges.append(Edge(index[fn], index[nxt], slot))
    return fns, edges


def _node(i: int, fn, named: dict[int, tuple[str, str]]) -> Node:
    node = Node(id=i, name=type(fn).__name__, forward=fn.metadata.get(KEY))
    variable = getattr(fn, "variable", None)
    if variable is not None:
        node.leaf = True
        node.group, node.label = named.get(id(variable), ("", ""))
        node.shape, node.value = tuple(variable.shape), summary(variable)
    elif node.forward is not None:
        node.shape, node.value = node.forward.shape, node.forward.value
    return node


def trace(output: torch.Tensor, *, title: str, names: dict[str, object] | None = None,
          forbidden: Iterable[str] = (), note: str = "") -> Graph:
    """Walk OUTPUT's backward graph, run torch.autograd.grad through it with a hook on every node and return what
    each node received and sent. NAMES groups the leaves (a module's parameters by their names); a group in
    FORBIDDEN that receives a gradient has its path marked and its ‖∇‖ kept."""
    check(output.grad_fn is not None, "the tensor has no grad_fn: nothing in its computation requires a gradient")
    fns, edges = _walk(output.grad_fn)
    check(len(fns) <= MAX_NODES, f"the graph has {len(fns)} nodes; gradlab draws up to {MAX_NODES} (a computation "
                                 f"small enough to read): draw a smaller piece of it")
    named = _named_leaves(names)
    nodes = [_node(i, fn, named) for i, fn in enumerate(fns)]
    ran = []

    def hook_for(node: Node):
        def hook(grads_out, grads_in):  # (what it sends to its next nodes, what arrived at it)
            node.order, node.grad_in = len(ran), grads_in[0]
            node.grads_out = [None if g is None else g.detach().clone() for g in grads_out]
            ran.append(node)
        return hook

    handles = [fn.register_hook(hook_for(n)) for fn, n in zip(fns, nodes, strict=True) if not n.leaf]
    leaves = [n for n in nodes if n.leaf]
    seed = torch.ones_like(output)
    try:
        grads = torch.autograd.grad(output, [fns[n.id].variable for n in leaves], seed, retain_graph=True,
                                    allow_unused=True)
    except RuntimeError as e:
        if "second time" not in str(e):
            raise
        raise GradlabError("the tensor's graph was freed by an earlier backward(): compute it again, or call "
                           "backward(retain_graph=True) first") from None
    finally:
        for h in handles:
            h.remove()
    graph = Graph(title=title, nodes=nodes, edges=edges, seed="1" if output.numel() == 1 else "ones",
                  leaf_grads={n.id: g for n, g in zip(leaves, grads, strict=True)}, note=note, output=output,
                  variables={n.id: fns[n.id].variable for n in leaves})
    _fill_leaves(graph)
    _mark_forbidden(graph, set(forbidden))
    return graph


def _fill_leaves(graph: Graph) -> None:
    """A leaf's arriving gradient is what autograd returned for it; an operation's shape comes from its gradient."""
    for n in graph.nodes:
        if n.leaf:
            n.grad_in = graph.leaf_grads.get(n.id)
        elif n.shape is None and n.grad_in is not None:
            n.shape = tuple(n.grad_in.shape)


def _mark_forbidden(graph: Graph, groups: set[str]) -> None:
    """Mark every edge on a path into a leaf of GROUPS, and keep each such group's measured ‖∇‖."""
    into = {n.id for n in graph.nodes if n.leaf and n.group in groups}
    changed = True
    while changed:  # nodes from which a forbidden leaf can be reached
        changed = False
        for e in graph.edges:
            if e.dst in into and e.src not in into:
                into.add(e.src)
                changed = True
    graph.edges = [dataclasses.replace(e, forbidden=e.dst in into) for e in graph.edges]
    for g in sorted(groups):
        if any(n.group == g and n.leaf for n in graph.nodes):
            graph.forbidden[g] = graph.group_norm(g)


# ---------------------------------------------------------------------------------------------------------------
# What a lesson adds to a traced graph: the step after backward that is its point, several graphs joined.
# ---------------------------------------------------------------------------------------------------------------

def after_backward(graph: Graph, name: str, sources: Iterable[int], *, facts: Iterable[str],
                   result: torch.Tensor | None = None) -> Node:
    """Add to GRAPH a step that runs after backward, outside autograd, on the gradients autograd returned for the
    leaves SOURCES (node ids): clip_by_global_norm, all_reduce. Each leaf gets an edge into it carrying its
    gradient; FACTS say what the step measured; RESULT is what it computed, where one tensor says it."""
    node = Node(id=len(graph.nodes), name=name, outside=True, facts=list(facts), grad_in=result)
    if result is not None:
        node.shape, node.value = tuple(result.shape), summary(result)
    graph.nodes.append(node)
    for i in sources:
        leaf = graph.nodes[i]
        leaf.grads_out.append(graph.leaf_grads[i])
        graph.edges.append(Edge(i, node.id, len(leaf.grads_out) - 1))
    return node


def join(graphs: list[Graph], *, title: str, parts: list[str]) -> Graph:
    """GRAPHS as one Graph (ddp's ranks, side by side), each node marked with its part (PARTS[i]); autograd's
    orders follow one another, as the passes ran. Its output is the outputs' sum: a backward from it gives each
    leaf the sum of what the parts gave it."""
    nodes, edges, leaf_grads, variables, forbidden = [], [], {}, {}, {}
    offset = ran = 0
    for graph, part in zip(graphs, parts, strict=True):
        for n in graph.nodes:
            nodes.append(dataclasses.replace(n, id=n.id + offset, part=part, grads_out=list(n.grads_out),
                                             facts=list(n.facts), order=None if n.order is None else n.order + ran))
        edges += [dataclasses.replace(e, src=e.src + offset, dst=e.dst + offset) for e in graph.edges]
        leaf_grads.update({i + offset: g for i, g in graph.leaf_grads.items()})
        variables.update({i + offset: v for i, v in graph.variables.items()})
        forbidden.update(graph.forbidden)
        ran += sum(n.order is not None for n in graph.nodes)
        offset += len(graph.nodes)
    outputs = [g.output for g in graphs if g.output is not None]
    return Graph(title=title, nodes=nodes, edges=edges, seed=graphs[0].seed, leaf_grads=leaf_grads,
                 forbidden=forbidden, output=sum(outputs[1:], outputs[0]) if outputs else None, variables=variables)
