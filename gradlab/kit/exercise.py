"""The exercise vocabulary: what an exercise is (Exercise, its text and what its checks claim), what checks it
(Checks: the harness that calls the student's function, the reference, the known mistakes, the relations the
diagnosis measures) and how two outputs are compared.

Each lesson declares its exercises in its own folder (gradlab/lessons/<lesson>/exercises/, see
gradlab/lessons/info.py); gradlab.practice collects them. This module imports torch only inside the comparisons:
`gradlab exercises`, the starter files and the pre-flight of `gradlab check` read the texts and claims without it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gradlab.kit.shared import CHANGED, GRAPH

if TYPE_CHECKING:
    import torch

    from gradlab.kit.harness import Harness

RESERVED = (CHANGED, GRAPH)  # the outputs a harness adds beside the function's own: rules, not values


@dataclass(frozen=True, kw_only=True)
class Exercise:
    """What a student writes: shown by `gradlab exercises`, written out by `gradlab exercise NAME` as a starter; and
    what its checks claim, so that a check that cannot start (a syntax error) still lists them, torch-free."""

    function: str  # what the student writes (a function, or an autograd.Function class)
    level: int  # 1 warm-up, 2 the lesson's point, 3 harder
    what: str  # one line: what to write
    signature: str  # the def (or class) line the starter writes, e.g. "def mse_grad(w, b, X, y):"
    doc: str  # the math, the shapes, the TF-1 line it replaces
    claims: dict[str, tuple[str, float]] = field(default_factory=dict)  # case kind -> (the claim, its bound)
    rules: tuple[tuple[str, float, str], ...] = ()  # further claims, measured by Checks.extra: (text, bound, op)
    keeps: tuple[str, ...] = ()  # the inputs the function must leave unchanged (the text says so)
    no_autograd: bool = False  # the text says "no autograd": a graph built while it runs fails a check
    # the harness calls the function on gloo worker processes (gradlab.kit.harness.gloo_harness): there is no one
    # backward pass for `gradlab check --graph` to draw, and neither the starter nor a failed check suggests it
    on_workers: bool = False
    forward: str = "x"  # an autograd.Function's forward arguments after ctx (the starter writes them)
    # what the library already does that the student is to write: calling one of these (a function, a method, a
    # class such as torch.optim.Optimizer: any of its subclasses) is a failed check of its own; the starter says so
    forbidden: tuple[str, ...] = ()
    lesson: str = ""  # filled in by gradlab.practice from the folder the exercise is declared in
    # filled in for a teacher's own exercise (gradlab.practice.classroom.own): the package its folder is imported as
    package: str = ""
    folder: str = ""  # filled in for a teacher's own exercise: its folder

    @property
    def name(self) -> str:
        """lesson.function, e.g. mnist.sgd_step."""
        return f"{self.lesson}.{self.function}"

    def all_rules(self) -> list[tuple[str, float, str]]:
        """Every further claim, in order: the exercise's own rules, then the inputs kept and no autograd."""
        out = list(self.rules)
        if self.keeps:
            out.append((f"your function leaves its inputs {', '.join(self.keeps)} as it found them (count of "
                        "inputs changed in place)", 0.0, "<="))
        if self.no_autograd:
            out.append(("no autograd: your function builds no autograd graph (tensors saved for a backward)", 0.0,
                        "<="))
        return out


@dataclass(kw_only=True)
class Mistake:
    """A known wrong answer: FN, written with the student's signature, and what to tell its author (a sentence, or a
    function of (the student's outputs, the reference's) when the sentence quotes a measured number). OUTPUTS, when
    given, computes its outputs on a case in closed form instead of calling FN through the harness (for exercises
    whose harness starts worker processes)."""

    name: str  # what the mistake is, in a few words: the diagnosis starts with it ("the 2 forgotten: …")
    fn: Callable | None  # the wrong answer, with the student's signature, called through the harness on every input
    diagnosis: str | Callable[[dict, dict], str]  # the fix: a sentence, or (student's outputs, reference's) -> one
    outputs: Callable[[dict], dict] | None = None  # case -> its outputs in closed form, instead of calling fn

    def tell(self, student: dict, reference: dict) -> str:
        return self.diagnosis if isinstance(self.diagnosis, str) else self.diagnosis(student, reference)


@dataclass(kw_only=True)
class Relation:
    """A way a wrong answer can be related to the right one, measured output by output: yours equals WHAT (e.g. "the
    softmax taken over the batch (dim=0) instead of the classes"), computed by FN (the student's signature) or in
    closed form by OUTPUTS; HINT is the fix."""

    what: str  # what a wrong output equals, said after "=" in the diagnosis
    fn: Callable | None = None  # computes it, with the student's signature (through the harness)
    hint: str = ""  # the fix, said after the relation
    outputs: Callable[[dict], dict] | None = None  # case -> its outputs in closed form, instead of calling fn


@dataclass(kw_only=True)
class Cause:
    """One cause a hint offers for what was measured, with the experiment that decides it: the mistake applied to the
    reference (FN, the student's signature, or OUTPUTS in closed form). WORDS and the FIX are said only when its
    outputs reproduce the student's on every input (gradlab/practice/judging/suspects.py)."""

    words: str  # the cause, e.g. "a sum over the transitions where the mean belongs"
    fix: str = ""  # what to do, said after a confirmed cause
    fn: Callable | None = None  # the mistake applied to the reference, with the student's signature
    outputs: Callable[[dict], dict] | None = None  # case -> its outputs in closed form, instead of calling fn


@dataclass(kw_only=True)
class Suspects:
    """A hint that offers causes (Checks.hints' value, in place of a sentence): LEAD, what the measurement itself says,
    then each of CAUSES said only where its experiment reproduces the student's values; when none does, the causes
    ruled out are named as such."""

    causes: tuple[Cause, ...]  # the causes offered, each said only where its experiment gives the student's values
    lead: str = ""  # what the measurement itself says, said first ("" for nothing)


@dataclass(kw_only=True)
class Variant:
    """A correct answer that differs from the reference by more than rounding, and why: a practitioner's building
    block (F.softplus's threshold, clip_grad_norm_'s + 1e-6). Within the bound it passes, and the note says so."""

    what: str  # the note shown when an answer matches it: what it is and why it differs
    fn: Callable | None = None  # the variant, with the student's signature (through the harness)
    outputs: Callable[[dict], dict] | None = None  # case -> its outputs in closed form, instead of calling fn


@dataclass(kw_only=True)
class Checks:
    """One exercise's machinery, on gradlab's side (never beside the submission): the HARNESS (its inputs, and how a
    function is called on each), the REFERENCE answer, the MISTAKES, and what the diagnosis measures.

    Diagnosis by experiment (gradlab/practice/judging/diagnosis.py) reads:
      names       output key -> the words for it ("∂cost/∂W")
      base        case -> {key: tensor}: relations are measured on yours − base (an update W_new − W)
      quantities  case -> [(symbol, value, meaning)]: a scale that equals one is named ("B", 100, "the batch size")
      relations   what a wrong output may equal instead (another axis, one part, the first output…)
      hints       (key, relation, detail) -> the fix, for a relation measured on an output ("*" for any), or a
                  Suspects: causes, each said only where its experiment reproduces the student's values
      errors      [(text in PyTorch's error, the fix)] for an exception the exercise's students meet
      experiments further measurements of the exercise's own: (cases, outputs, refs) -> a sentence or None
      spot        (case, key) -> (coordinates, name): where in an output a difference is (x = 0, x ≥ 89)
      variants    correct answers that differ by more than rounding, with why
      steps       the outputs of successive updates, in order: the first wrong one is diagnosed, the later ones
                  follow from it
    """

    harness: Harness  # harness.py's HARNESSES entry: the inputs, and how a function is called on each
    reference: Callable | None  # the right answer, with the student's signature, called through the harness
    mistakes: list[Mistake]  # the known wrong answers, matched on every input and named with their fix
    # (outputs on every input, the inputs) -> one measured value per Exercise.rules entry, in order
    extra: Callable[[list[dict], list[dict]], list[float]] = field(default=lambda outs, cases: [])
    expected: Callable[[dict], dict] | None = None  # the reference's outputs in closed form (instead of the harness)
    names: dict[str, str] = field(default_factory=dict)  # output key -> the words for it in a diagnosis ("∂cost/∂W")
    base: Callable[[dict], dict] | None = None  # case -> {key: tensor}: relations measured on yours − base (W_new − W)
    # case -> [(symbol, value, meaning)]: a wrong scale that equals one is named ("B", 100, "the batch size")
    quantities: Callable[[dict], list[tuple[str, Any, str]]] = field(default=lambda case: [])
    relations: list[Relation] = field(default_factory=list)  # what a wrong output may equal (another axis, one part…)
    # (output key, relation, detail) -> the fix, for a relation measured on an output ("*" for any); a Suspects in
    # place of the sentence offers causes, each said only where an experiment confirms it
    hints: dict[tuple[str, str, str], str | Suspects] = field(default_factory=dict)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (text in PyTorch's error, the fix) for an exception
    # (inputs, outputs, reference's outputs) -> a sentence or None: further measurements of the exercise's own
    experiments: list[Callable[[list[dict], list[dict], list[dict]], str | None]] = field(default_factory=list)
    # (case, key) -> (coordinates, name) or None: where in an output a difference is (x = 0, x ≥ 89)
    spot: Callable[[dict, str], tuple[Any, str] | None] = field(default=lambda case, key: None)
    variants: list[Variant] = field(default_factory=list)  # correct answers that differ by more than rounding
    steps: list[tuple[str, ...]] = field(default_factory=list)  # outputs in time order: an update's, then the next's
    rule_hints: list[str] = field(default_factory=list)  # the fix for each of the exercise's own rules, in order

    def cases(self, seed: int) -> list[dict]:
        """The inputs: [{"label", "kind", tensors…}], with "family" and "vary" where a few vary one thing."""
        return self.harness.cases(seed)

    def call(self, fn: Callable, case: dict) -> dict:
        """FN's outputs on CASE: {name: tensor or [tensors]}."""
        return self.harness.call(fn, case)

    def run(self, what, case: dict) -> dict:
        """The outputs of the reference (None), a Mistake, a Relation or a Variant on CASE: closed form when given."""
        if what is None:
            return self.expected(case) if self.expected else self.call(self.reference, case)
        return what.outputs(case) if what.outputs else self.call(what.fn, case)

    def word(self, key: str) -> str:
        return self.names.get(key, key)


# ---------------------------------------------------------------------------------------------------------------
# Comparing outputs
# ---------------------------------------------------------------------------------------------------------------

def num(v: float) -> str:
    """A number as a student reads it: 100, 0.01, 1/30, −1, 2.5e-09."""
    if not math.isfinite(v):
        return str(v)
    for k in (2, 3, 4, 5, 8, 10):
        if abs(v * k - round(v * k)) < 1e-9 and abs(round(v * k)) == 1:
            return f"{'−' if v < 0 else ''}1/{k}"
    s = f"{v:.4g}"
    return s.replace("-", "−")


def values(out: dict) -> dict:
    """OUT without the rule outputs (inputs changed, autograd graph, and any key that starts with "_", which a
    harness adds for an exercise's own rules): what is compared with the reference."""
    return {k: v for k, v in out.items() if k not in RESERVED and not k.startswith("_")}


def tensors(out: Any) -> list[torch.Tensor]:
    """Every tensor of an output, in order."""
    items = out.values() if isinstance(out, dict) else out
    flat = []
    for v in items:
        flat += tensors(v) if isinstance(v, dict | list | tuple) else [v]
    return flat


# what difference() measures, in the words a student reads (a claim's text, the check's table, the feedback)
DIFFERENCE = "largest |yours − expected| ÷ max(1, largest |expected|), tensor by tensor"


def difference(a: dict, b: dict) -> float:
    """The checker's difference (DIFFERENCE): max |a − b| / max(1, max |b|) over every tensor; inf when the shapes
    differ or a is not finite where b is."""
    import torch

    xs, ys = tensors(a), tensors(b)
    if len(xs) != len(ys) or any(x.shape != y.shape for x, y in zip(xs, ys, strict=True)):
        return math.inf
    worst = 0.0
    for x, y in zip(xs, ys, strict=True):
        if not x.numel():
            continue
        if not torch.isfinite(x).all():
            both = ~torch.isfinite(x) & ~torch.isfinite(y) & ((x == y) | (x.isnan() & y.isnan()))
            if not (torch.isfinite(x) | both).all():
                return math.inf
            x, y = x[torch.isfinite(x)], y[torch.isfinite(x)]
            if not x.numel():
                continue
        scale = max(1.0, float(y.abs().max())) if y.numel() else 1.0
        worst = max(worst, float((x.double() - y.double()).abs().max()) / scale)
    return worst


def relative_to_largest(a: torch.Tensor | list[torch.Tensor], b: torch.Tensor | list[torch.Tensor]) -> float:
    """max |a − b| / max |b| over all the numbers of A and B (lists of tensors flattened into one): how far A is
    from B relative to B's largest number, with no floor (0 when both are 0). A lesson's measure of two
    computations that must agree; difference() above is the checker's, per tensor and in units of max(1, |b|)."""
    import torch

    a = torch.cat([t.reshape(-1) for t in a]) if isinstance(a, list | tuple) else a
    b = torch.cat([t.reshape(-1) for t in b]) if isinstance(b, list | tuple) else b
    return float((a.double() - b.double()).abs().max() / b.double().abs().max().clamp_min(1e-300))


def same(a: dict, b: dict, tolerance: float = 1e-5) -> bool:
    """Whether two outputs agree tensor by tensor, NaN where NaN: how a submission is matched to a known mistake."""
    import torch

    xs, ys = tensors(a), tensors(b)
    return len(xs) == len(ys) and all(
        x.shape == y.shape and torch.allclose(x.double(), y.double(), rtol=tolerance, atol=tolerance * 1e-2,
                                              equal_nan=True) for x, y in zip(xs, ys, strict=True))


def autograd_outputs(f: Callable, inputs: list, dy, directions: list, names: tuple[str, ...] = ()) -> dict:
    """What gradlab.kit.harness.function_outputs measures of an autograd.Function, for a plain differentiable
    function F computed by autograd (the library's way, a reference): value, gradient(s) for the upstream DY, and
    the second derivative along DIRECTIONS."""
    import torch

    from gradlab.kit.harness import keyed

    xs = [x.clone().requires_grad_(True) for x in inputs]
    y = f(*xs)
    grads = torch.autograd.grad(y, xs, grad_outputs=dy, create_graph=True)
    seconds = torch.autograd.grad(sum((g * v).sum() for g, v in zip(grads, directions, strict=True)), xs,
                                  allow_unused=True)
    seconds = [torch.zeros_like(x.detach()) if s is None else s.detach() for x, s in zip(xs, seconds, strict=True)]
    return keyed(y.detach(), [g.detach() for g in grads], seconds, names)


def optimizer_steps(cases: list[dict], outputs: list[dict], refs: list[dict]) -> str | None:
    """An experiment of an update exercise whose harness counts optimizer.step()'s calls ("_steps K", after update K)
    and keeps the gradient it was given ("grad K"): when the parameters did not move, which of the two it was,
    measured: step() never called, or called with .grad empty (None or zero)."""
    for case, out, ref in zip(cases, outputs, refs, strict=True):
        before = 0.0
        for k in range(1, len(ref) + 1):
            if f"_steps {k}" not in out:
                break
            now = float(out[f"_steps {k}"])
            grad_zero = all(float(g.abs().max()) == 0 for g in tensors(out[f"grad {k}"]) if g.numel())
            expected_zero = all(float(g.abs().max()) == 0 for g in tensors(ref[f"grad {k}"]) if g.numel())
            if now == before:
                return (f"optimizer.step() was never called in update {k} on '{case['label']}' (counted): call it "
                        "after handing the gradients over, p.grad = g")
            if grad_zero and not expected_zero:
                return (f"optimizer.step() ran in update {k} on '{case['label']}' with every .grad empty (None or "
                        "zero, measured when it ran): no gradient reached the parameters before it. Either the "
                        "gradients were never handed over or were reset after (set p.grad = g, or call backward, "
                        "after any zero_grad(), then step()), or the loss has no graph to the parameters: the "
                        "prediction itself, V(s) or Q(s, a), detached or computed under torch.no_grad() (only the "
                        "target is cut from the graph)")
            before = now
    return None


def norm_ratio(a: dict, b: dict) -> float:
    """‖a‖ / ‖b‖, each the global norm of every tensor of an output."""
    from gradlab.kit.training import global_norm

    return float(global_norm(tensors(a)) / max(float(global_norm(tensors(b))), 1e-30))
