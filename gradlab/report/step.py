"""`gradlab step LESSON`: the backward pass of the lesson's key computation, one node at a time, in the order
autograd ran it. Each step shows the gradient arriving (the sum, where a tensor was used twice), the node's local
derivative (its formula, for the ops a lesson uses) and what it sends on; the walk stops at the first non-finite
gradient and says why; each graph's "look at" line is said first and the node where that point shows is marked. On
a terminal it waits after each node (Enter: on, s: skip to the point, q: quit; `--predict`: asks for the next
gradient before its local derivative is shown and scores the guesses); piped, it prints every step. At the end a
claim checks the walk: the gradients shown arriving at each leaf add up to what `.grad` holds after a real
backward().

The command (its flags, and how it asks on a terminal) is gradlab/cli/step.py; this module imports torch and rich,
when the command runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from rich.markup import escape

from gradlab.kit.autograd_graph import Node, summary
from gradlab.kit.result import Claim
from gradlab.lessons import LESSONS
from gradlab.report.chain import FORMULAS, local_value
from gradlab.report.console import make_console
from gradlab.report.graph_svg import why_nonfinite

Prompt = Callable[[str], str]  # asks on a terminal: the text shown → the line typed

STEP_NUMBERS = 8  # a gradient of up to this many numbers is shown in full

@dataclass
class Score:
    """The student's guesses with --predict."""

    asked: int = 0
    right: int = 0
    misses: list[str] = field(default_factory=list)


def numbers(t) -> str:
    """A tensor for the walk: in full up to STEP_NUMBERS numbers, else its mean and norm."""
    return summary(t, limit=STEP_NUMBERS)


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

def ask(node, graph, *, score: Score, prompt: Prompt, console) -> str:
    """--predict: the student's guess for the one number NODE sends, scored against what autograd sent; asked
    before the local derivative is shown. Returns what was typed (q quits, s skips, as after a step)."""
    outs = [graph.edge_grad(e) for e in graph.outgoing(node)]
    if len(outs) != 1 or outs[0] is None or outs[0].numel() != 1:
        return ""
    text = prompt(f"  your guess: what does {node.name} send on? (Enter: skip · s: skip to the point · q: quit): ")
    try:
        guess = float(text)
    except ValueError:
        return text
    actual = float(outs[0])
    right = (math.isnan(guess) and math.isnan(actual)) or math.isclose(guess, actual, rel_tol=1e-3, abs_tol=1e-6)
    score.asked += 1
    score.right += right
    if not right:
        score.misses.append(f"{node.name}: you said {guess:g}, autograd sent {actual:.6g}")
    console.print("  ✓ right" if right else f"  ✗ autograd sent {actual:.6g}", markup=False)
    return text


@dataclass
class Keys:
    """What the student typed at the prompts so far."""

    quit: bool = False  # q: the walk ends here
    skip: bool = False  # s: on, without stopping, to the lesson's point in this graph

    def read(self, text: str) -> None:
        key = text.strip().lower()
        self.quit, self.skip = self.quit or key == "q", self.skip or key == "s"


def point(graph) -> Node | None:
    """The node where the lesson's point shows: where a NaN is born, where a cut feeds a constant in, or the step
    after backward (clip, all-reduce); None: at the leaves (gradient reaching a group it must not) or nowhere."""
    if graph.first_nonfinite is not None:
        return graph.first_nonfinite
    if graph.cuts:
        return graph.cuts[0][0]
    return next((n for n in graph.nodes if n.outside), None)


POINT = "[bold blue]★ the lesson's point is here[/]"
NEXT = "  Enter: next node · s: skip to the point · q: quit "


def _step(graph, node, k: int, total: int, console, *, here: bool) -> None:
    where = f"  [dim]{escape(node.forward.where)}[/]" if node.forward and node.forward.where else ""
    console.print(f"[bold]step {k}/{total}[/]  [bold cyan]{node.name}[/] #{node.id}{where}")
    if here:
        console.print(f"  {POINT}")
    console.print(f"  arrives  ∇ = {escape(arriving_text(graph, node))}")


def _local(graph, node, console) -> None:
    local = local_value(node)
    formula = FORMULAS.get(node.name, "(no formula here: the backward this op defines)")
    here = f"; here the local derivative is {escape(numbers(local))}" if local is not None else ""
    console.print(f"  local    {escape(formula)}{here}")
    for line in sends_text(graph, node):
        console.print(f"  sends    {escape(line)}")
    for cut in node.forward.cuts if node.forward else ():
        console.print(f"  [bold]✂ a constant feeds in here[/] ({escape(cut.why)}: {escape(cut.where)}): no gradient "
                      f"flows back into what computed it")


def walk(graph, console, *, prompt: Prompt | None, predict: bool, score: Score, keys: Keys | None = None) -> None:
    """Every node autograd ran, in its order; stops at the first one that sends a non-finite gradient; then the
    leaves and the steps after backward. PROMPT (on a terminal; None when piped) waits after each node (Enter: on,
    s: skip to the lesson's point, q: quit), or with PREDICT asks for the next gradient before its local derivative
    is shown. KEYS: what was typed so far (q ends the walks of the graphs after this one too)."""
    keys = keys or Keys()
    ran = sorted((n for n in graph.nodes if n.order is not None), key=lambda n: n.order)
    target = point(graph)
    console.rule(escape(graph.title))
    if graph.note:
        console.print(f"[bold blue]{escape(graph.note)}[/]")
    for k, node in enumerate(ran, 1):
        if keys.skip and node is not target and node.finite:
            continue
        keys.skip = False
        _step(graph, node, k, len(ran), console, here=node is target)
        if predict and prompt:
            keys.read(ask(node, graph, score=score, prompt=prompt, console=console))
        _local(graph, node, console)
        if not node.finite:
            console.print(f"[bold red]  ✗ the first non-finite gradient is born here: {escape(why_text(node))}. "
                          f"Every node after it receives it: the walk stops.[/]")
            return
        if keys.quit:
            return
        if prompt and not predict and k < len(ran):
            keys.read(prompt(NEXT))
        if keys.quit:
            return
    keys.skip = False
    for leaf_id in graph.leaf_grads:
        leaf = graph.nodes[leaf_id]
        name = f"{leaf.group}.{leaf.label}" if leaf.group else leaf.label or "a leaf"
        console.print(f"[bold green]{escape(name)}[/] (AccumulateGrad): .grad = {escape(arriving_text(graph, leaf))}")
        if leaf.group in graph.forbidden and graph.leaf_grads[leaf_id] is not None:
            console.print(f"  [bold red]✗ gradient reaches {escape(name)}: {POINT}, the path the lesson says must "
                          f"not carry any (‖∇ {escape(leaf.group)}‖ = {graph.forbidden[leaf.group]:.6g})[/]")
    for node in (n for n in graph.nodes if n.outside):
        console.print(f"[bold cyan]{escape(node.name)}[/] #{node.id}: after backward, outside autograd, on "
                      f"{len(graph.incoming(node))} leaves' gradients  {POINT if node is target else ''}")
        console.print(f"  rule     {escape(FORMULAS.get(node.name, ''))}")
        for fact in node.facts:
            console.print(f"  {escape(fact)}")


def check_walk(graphs) -> Claim:
    """The gradients shown arriving at each leaf, added up, against .grad after a real backward()."""
    worst = 0.0
    for graph in graphs:
        leaves: dict[int, list[int]] = {}  # a tensor → its leaf nodes (one per rank in ddp's joined graph)
        for leaf_id, variable in graph.variables.items():
            leaves.setdefault(id(variable), []).append(leaf_id)
        for ids in leaves.values():
            variable = graph.variables[ids[0]]
            shown = sum(graph.edge_grad(e) for i in ids for e in graph.incoming(graph.nodes[i]))
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
    graphs = info.load().graphs(info.config(seed=seed), **info.step_inputs)  # small: every number fits
    console = make_console(quiet=False, stderr=False)
    if predict and not prompt:
        console.print("[yellow]note:[/] --predict asks on a terminal; not one here, so every step is shown")
    score, keys = Score(), Keys()
    for graph in graphs:
        if not keys.quit:
            walk(graph, console, prompt=prompt, predict=predict, score=score, keys=keys)
    claim = check_walk(graphs)
    mark = "[green]✓[/]" if claim.passed else "[red]✗[/]"
    console.print(f"{mark} {claim.text}: {claim.value:.3g} ≤ {claim.bound:g}")
    if score.asked:
        console.print(f"your predictions: {score.right} of {score.asked} right" +
                      "".join(f"\n  {m}" for m in score.misses))
    return 0 if claim.passed else 1
