"""What one node of a measured backward graph does to the gradient, in words and numbers: the chain rule at that
node. `gradlab step` prints it in the terminal, the HTML graph shows it in its panel when a node is clicked; both
read it here, from the hooks' tensors (gradlab.kit.autograd_graph), never recomputed.
"""

from __future__ import annotations

import torch

from gradlab.kit.autograd_graph import Graph, Node, summary

FULL = 64  # a tensor of up to this many numbers is shown in full (the forward keeps inputs up to this size too)

# The local derivative of the ops the lessons use, as the chain rule applies it: ∇ is the arriving gradient.
FORMULAS = {
    "ExpBackward0": "y = exp(x): sends ∇ · exp(x)",
    "LogBackward0": "y = log(x): sends ∇ / x",
    "AddBackward0": "y = a + b: sends ∇ to a and to b (summed over broadcast axes)",
    "SubBackward0": "y = a − b: sends ∇ to a, −∇ to b",
    "MulBackward0": "y = a · b: sends ∇ · b to a, ∇ · a to b",
    "DivBackward0": "y = a / b: sends ∇ / b to a, −∇ · a / b² to b",
    "NegBackward0": "y = −x: sends −∇",
    "PowBackward0": "y = xᵏ: sends ∇ · k · xᵏ⁻¹",
    "SumBackward0": "y = Σ x: sends ∇ to every element",
    "SumBackward1": "y = Σ x along an axis: sends ∇ to every element of it",
    "MeanBackward0": "y = mean x: sends ∇ / N to every element",
    "MeanBackward1": "y = mean x along an axis: sends ∇ / N",
    "AddmmBackward0": "y = b + x W: sends Σ_rows ∇ to b, ∇ Wᵀ to x, xᵀ ∇ to W",
    "MmBackward0": "y = a b: sends ∇ bᵀ to a, aᵀ ∇ to b",
    "MvBackward0": "y = X v: sends ∇ vᵀ to X, Xᵀ ∇ to v",
    "TBackward0": "y = xᵀ: sends ∇ᵀ",
    "LogSoftmaxBackward0": "y = z − logsumexp(z): sends ∇ − softmax(z) · Σ∇",
    "NllLossBackward0": "y = −mean_i z[i, tᵢ]: sends −∇/B to each z[i, tᵢ], 0 elsewhere",
    "ReluBackward0": "y = max(x, 0): sends ∇ where x > 0, 0 elsewhere",
    "TanhBackward0": "y = tanh(x): sends ∇ · (1 − y²)",
    "SigmoidBackward0": "y = σ(x): sends ∇ · y(1 − y)",
    "WhereBackward0": "y = where(c, a, b): sends ∇ to a where c, to b elsewhere (0 to the unused side)",
    "MaxBackward0": "y = max along an axis: sends ∇ to the arg max only",
    "GatherBackward0": "y = x[i, aᵢ]: sends ∇ back to the gathered places, 0 elsewhere",
    "SelectBackward0": "y = x[i]: sends ∇ to x[i], 0 elsewhere",
    "SqueezeBackward1": "a reshape: sends ∇ reshaped",
    "UnsqueezeBackward0": "a reshape: sends ∇ reshaped",
    "ViewBackward0": "a reshape: sends ∇ reshaped",
    "SmoothL1LossBackward0": "y = mean Huber(q − t): sends ∇ · clamp(q − t, −1, 1)/N to q",
    "AccumulateGrad": "a leaf: adds what arrives into .grad",
    "clip_by_global_norm": "after backward: every gᵢ ← gᵢ · clip_norm / max(√(Σ‖gᵢ‖²), clip_norm)",
    "all_reduce(SUM)": "after backward: every rank's g ← Σ_ranks g_r (one flat buffer)",
}


def name_of(node: Node) -> str:
    """A node as a reader names it: a leaf by its parameter ("target.0.weight"), an op by PyTorch's name."""
    name = f"{node.group}.{node.label}" if node.group else node.label or node.name
    return f"{name} ({node.part})" if node.part else name


def local_value(node: Node) -> torch.Tensor | None:
    """The local derivative's value where it is one number per element (exp, log, tanh), else None."""
    f = node.forward
    if f is None or f.output is None:
        return None
    if node.name == "ExpBackward0":
        return f.output  # ∂exp(x)/∂x = exp(x)
    if node.name == "LogBackward0" and f.inputs and f.inputs[0] is not None:
        return 1 / f.inputs[0]  # ∂log(x)/∂x = 1/x
    if node.name == "TanhBackward0":
        return 1 - f.output**2  # ∂tanh(x)/∂x = 1 − tanh(x)²
    return None


def formula(node: Node) -> str:
    return FORMULAS.get("AccumulateGrad" if node.leaf else node.name, "(no formula here: the backward this op "
                                                                       "defines)")


def _number(v: float, tiny: float) -> str:
    return "0" if v == 0 or abs(v) <= tiny else f"{v:.4g}"


def tensor_text(t: torch.Tensor | None, full: int = FULL) -> str:
    """A tensor with its shape: every number when it has up to FULL (rows of a matrix on their own lines), else
    its mean, norm, min and max. Rounding noise (|v| ≤ 1e-6 · max |t|, where the exact value is 0) is shown as 0."""
    if t is None:
        return ""
    t = t.detach().cpu()
    shape = "×".join(map(str, t.shape)) or "scalar"
    if t.numel() > full or not t.is_floating_point():
        return f"{shape}  {summary(t)}"
    d = t.double()
    finite = d[torch.isfinite(d)]
    tiny = 1e-6 * float(finite.abs().max()) if finite.numel() else 0.0

    def nested(x: torch.Tensor, depth: int) -> str:
        if x.dim() == 0:
            return _number(float(x), tiny)
        if x.dim() == 1:
            return "[" + ", ".join(_number(v, tiny) for v in x.tolist()) + "]"
        return "[" + (",\n" + " " * (depth + 1)).join(nested(r, depth + 1) for r in x) + "]"

    return f"{shape}  {nested(d, len(shape) + 1)}"


def panel(graph: Graph, node: Node) -> dict:
    """Everything the page shows for NODE when it is clicked: what it computed and where, its local derivative,
    each gradient that arrived and their sum, what it sent on, what the lesson measured there."""
    incoming = [{"from": f"{name_of(graph.nodes[e.src])} #{e.src}", "grad": tensor_text(graph.edge_grad(e))}
                for e in graph.incoming(node)]
    sends = [{"to": f"{name_of(graph.nodes[e.dst])} #{e.dst}", "grad": tensor_text(graph.edge_grad(e))}
             for e in graph.outgoing(node)]
    local = local_value(node)
    forward = node.forward
    return {
        "title": f"{name_of(node)}  #{node.id}", "name": node.name, "formula": formula(node), "leaf": node.leaf,
        "local": tensor_text(local) if local is not None else "",
        "where": forward.where if forward else "",
        "value": (tensor_text(forward.output) if forward and forward.output is not None else
                  f"{'×'.join(map(str, node.shape or ())) or 'scalar'}  {node.value}" if node.value else ""),
        "incoming": incoming,
        "sum": tensor_text(node.grad_in) if node.grad_in is not None else "1 (the seed)" if node.id == 0 else "",
        "sends": sends, "facts": list(node.facts),
        "answer": _answer(graph, node),
    }


def _answer(graph: Graph, node: Node) -> str:
    """The one number NODE sends on, as JavaScript's Number() reads it ("NaN", "Infinity"), or "" when it sends
    more than one: what the page's predict mode checks a guess against."""
    outs = [graph.edge_grad(e) for e in graph.outgoing(node)]
    if len(outs) != 1 or outs[0] is None or outs[0].numel() != 1:
        return ""
    v = float(outs[0])
    return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity") if abs(v) == float("inf") else repr(v)
