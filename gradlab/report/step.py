"""`gradlab step LESSON`: the backward pass of the lesson's key computation, one node at a time, in the order
autograd ran it. Each step shows the gradient arriving (the sum, where a tensor was used twice), the node's local
derivative (its formula, for the ops a lesson uses) and what it sends on; the walk stops at the first non-finite
gradient and says why. On a terminal it waits for Enter after each node (`--predict`: asks for the next gradient
first and scores the guesses); piped, it prints every step. At the end a claim checks the walk: the gradients shown
arriving at each leaf add up to what `.grad` holds after a real backward().

The command (its flags, and how it asks on a terminal) is gradlab/cli/step.py; this module imports torch and rich,
when the command runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from rich.markup import escape

from gradlab.kit.autograd_graph import summary
from gradlab.kit.result import Claim
from gradlab.lessons import LESSONS
from gradlab.report.console import make_console
from gradlab.report.graph import why_nonfinite

Prompt = Callable[[str], str]  # asks on a terminal: the text shown → the line typed

# The small inputs each lesson's graphs() takes for stepping, so every number fits on the screen.
TINY = {"dqn": {"transitions": 1}, "clip": {"images": 1}, "ddp": {"images": 2}, "actor-critic": {"states": 1}}

STEP_NUMBERS = 8  # a gradient of up to this many numbers is shown in full

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
    "SqueezeBackward1": "a reshape: sends ∇ reshaped",
    "UnsqueezeBackward0": "a reshape: sends ∇ reshaped",
    "ViewBackward0": "a reshape: sends ∇ reshaped",
    "SmoothL1LossBackward0": "y = mean Huber(q − t): sends ∇ · clamp(q − t, −1, 1)/N to q",
}


@dataclass
class Score:
    """The student's guesses with --predict."""

    asked: int = 0
    right: int = 0
    misses: list[str] = field(default_factory=list)


def numbers(t) -> str:
    """A tensor for the walk: in full up to STEP_NUMBERS numbers, else its mean and norm."""
    return summary(t, limit=STEP_NUMBERS)


def local_value(node):
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


def arriving_text(graph, node) -> str:
    """The arriving gradient; where several nodes send to it, each term and their sum (a tensor used twice)."""

    edges = graph.incoming(node)
    total = numbers(node.grad_in) if node.grad_in is not None else "1 (the seed)"
    if len(edges) < 2:
        source = f"  from {graph.nodes[edges[0].src].name} #{edges[0].src}" if edges else ""
        return total + source
    terms = " + ".join(f"{numbers(graph.edge_grad(e))} (from {graph.nodes[e.src].name} #{e.src})" for e in edges)
    return f"{terms} = {total}   ← used {len(edges)} times: the gradients add"


def sends_text(graph, node) -> list[str]:

    out = []
    for e in (e for e in graph.edges if e.src == node.id):
        target = graph.nodes[e.dst]
        name = f"{target.group}.{target.label}" if target.group else target.label or target.name
        out.append(f"{numbers(graph.edge_grad(e))}  → {name} #{e.dst}")
    return out or ["(nothing that needs a gradient)"]


def why_text(node) -> str:
    local = local_value(node)
    if local is not None and node.grad_in is not None:
        return f"∇ {numbers(node.grad_in)} × local {numbers(local)} = {numbers(node.grads_out[0])}"
    return why_nonfinite(node)


# ---------------------------------------------------------------------------------------------------------------
# The walk.
# ---------------------------------------------------------------------------------------------------------------

def ask(node, graph, *, score: Score, prompt: Prompt, console) -> None:
    """--predict: the student's guess for the one number NODE sends, scored against what autograd sent."""
    outs = [graph.edge_grad(e) for e in graph.edges if e.src == node.id]
    if len(outs) != 1 or outs[0] is None or outs[0].numel() != 1:
        return
    text = prompt(f"  your guess: what does {node.name} send on? (Enter: skip): ")
    try:
        guess = float(text)
    except ValueError:
        return
    actual = float(outs[0])
    right = (math.isnan(guess) and math.isnan(actual)) or math.isclose(guess, actual, rel_tol=1e-3, abs_tol=1e-6)
    score.asked += 1
    score.right += right
    if not right:
        score.misses.append(f"{node.name}: you said {guess:g}, autograd sent {actual:.6g}")
    console.print("  ✓ right" if right else f"  ✗ autograd sent {actual:.6g}", markup=False)


def walk(graph, console, *, prompt: Prompt | None, predict: bool, score: Score) -> None:
    """Every node autograd ran, in its order; stops at the first one that sends a non-finite gradient. PROMPT (on a
    terminal; None when piped) waits for Enter after each node, or with PREDICT asks for the next gradient."""
    ran = sorted((n for n in graph.nodes if n.order is not None), key=lambda n: n.order)
    console.rule(escape(graph.title))
    for k, node in enumerate(ran, 1):
        where = f"  [dim]{escape(node.forward.where)}[/]" if node.forward and node.forward.where else ""
        console.print(f"[bold]step {k}/{len(ran)}[/]  [bold cyan]{node.name}[/] #{node.id}{where}")
        console.print(f"  arrives  ∇ = {escape(arriving_text(graph, node))}")
        local = local_value(node)
        formula = FORMULAS.get(node.name, "(no formula here: the backward this op defines)")
        here = f"; here the local derivative is {escape(numbers(local))}" if local is not None else ""
        console.print(f"  local    {escape(formula)}{here}")
        if predict and prompt:
            ask(node, graph, score=score, prompt=prompt, console=console)
        for line in sends_text(graph, node):
            console.print(f"  sends    {escape(line)}")
        if not node.finite:
            console.print(f"[bold red]  ✗ the first non-finite gradient is born here: {escape(why_text(node))}. "
                          f"Every node after it receives it: the walk stops.[/]")
            return
        if prompt and not predict and k < len(ran):
            prompt("  Enter: next node")
    for leaf_id in graph.leaf_grads:
        leaf = graph.nodes[leaf_id]
        name = f"{leaf.group}.{leaf.label}" if leaf.group else leaf.label or "a leaf"
        console.print(f"[bold green]{escape(name)}[/] (AccumulateGrad): .grad = {escape(arriving_text(graph, leaf))}")


def check_walk(graphs) -> Claim:
    """The gradients shown arriving at each leaf, added up, against .grad after a real backward()."""
    worst = 0.0
    for graph in graphs:
        for leaf_id, variable in graph.variables.items():
            shown = sum(graph.edge_grad(e) for e in graph.incoming(graph.nodes[leaf_id]))
            saved, variable.grad = variable.grad, None
            graph.output.backward(torch.ones_like(graph.output), retain_graph=True)
            real, variable.grad = variable.grad, saved
            same_nan = torch.equal(shown.isnan(), real.isnan())
            ok = ~(shown.isnan() | real.isnan())
            diff = float((shown[ok].double() - real[ok].double()).abs().max()) if ok.any() else 0.0
            worst = max(worst, diff if same_nan else math.inf)
    return Claim("walk-sums-to-grad", "the gradients shown arriving at each leaf add up to its .grad after "
                 "backward() (max |Δ|; NaN where .grad has NaN)", worst, 1e-6)


def walk_lesson(lesson: str, *, seed: int, predict: bool, prompt: Prompt | None) -> int:
    """Walk LESSON's backward pass (its key computation, on a tiny input) node by node, then check the walk; PROMPT:
    how to ask on a terminal (None: piped, every step printed). Returns the exit code: 0 when the claim holds."""
    info = LESSONS[lesson]
    graphs = info.load().graphs(info.config(seed=seed), **TINY.get(lesson, {}))
    console = make_console(quiet=False, stderr=False)
    if predict and not prompt:
        console.print("[yellow]note:[/] --predict asks on a terminal; not one here, so every step is shown")
    score = Score()
    for graph in graphs:
        walk(graph, console, prompt=prompt, predict=predict, score=score)
    claim = check_walk(graphs)
    mark = "[green]✓[/]" if claim.passed else "[red]✗[/]"
    console.print(f"{mark} {claim.text}: {claim.value:.3g} ≤ {claim.bound:g}")
    if score.asked:
        console.print(f"your predictions: {score.right} of {score.asked} right" +
                      "".join(f"\n  {m}" for m in score.misses))
    return 0 if claim.passed else 1
