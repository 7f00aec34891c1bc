"""The exercise vocabulary: what an exercise is (Exercise, its text), what checks it (Checks: the harness that calls
the student's function, the reference, the known mistakes, the claims) and how two outputs are compared.

Each lesson declares its exercises in its own folder (gradlab/lessons/<lesson>/exercises/, see
gradlab/lessons/info.py); gradlab.practice collects them. This module imports torch only inside the comparisons:
`gradlab exercises` reads the texts without it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from gradlab.practice.harness import Harness


@dataclass(frozen=True)
class Exercise:
    """What a student writes: shown by `gradlab exercises`, written out by `gradlab exercise NAME` as a starter."""

    function: str  # what the student writes (a function, or an autograd.Function class)
    level: int  # 1 warm-up, 2 the lesson's point, 3 harder
    what: str  # one line: what to write
    signature: str
    doc: str  # the math, the shapes, the TF-1 line it replaces
    # what the library already does that the student is to write: calling one of these (a function, a method, a
    # class such as torch.optim.Optimizer: any of its subclasses) is a failed check of its own; the starter says so
    forbidden: tuple[str, ...] = ()
    lesson: str = ""  # filled in by gradlab.practice from the folder the exercise is declared in

    @property
    def name(self) -> str:
        """lesson.function, e.g. mnist.sgd_step."""
        return f"{self.lesson}.{self.function}"


@dataclass
class Mistake:
    name: str
    fn: Callable  # a wrong implementation with the student's signature
    diagnosis: Callable[[dict, dict], str]  # (the student's outputs, the reference's) -> what to tell them


@dataclass
class Checks:
    """One exercise's machinery, on gradlab's side (never beside the submission): the HARNESS (its inputs, and how a
    function is called on each), the REFERENCE answer, the MISTAKES, and what each input's kind claims (the claim's
    text, its bound on the relative difference)."""

    harness: Harness
    reference: Callable
    mistakes: list[Mistake]
    claims: dict[str, tuple[str, float]]  # case kind -> (the claim, its bound on the relative difference)
    extra: Callable[[list[dict], list[dict]], list[tuple[str, float, float, str]]] = field(
        default=lambda outs, cases: [])  # further claims on the student's outputs: (text, measured, bound, op)

    def cases(self, seed: int) -> list[dict]:
        """The inputs: [{"label", "kind", tensors…}]."""
        return self.harness.cases(seed)

    def call(self, fn: Callable, case: dict) -> dict:
        """FN's outputs on CASE: {name: tensor or [tensors]}."""
        return self.harness.call(fn, case)


# ---------------------------------------------------------------------------------------------------------------
# Comparing outputs
# ---------------------------------------------------------------------------------------------------------------

def tensors(out: Any) -> list[torch.Tensor]:
    """Every tensor of an output, in order."""
    items = out.values() if isinstance(out, dict) else out
    flat = []
    for v in items:
        flat += tensors(v) if isinstance(v, dict | list | tuple) else [v]
    return flat


def relative(a: dict, b: dict) -> float:
    """max |a − b| / max(1, max |b|) over every tensor; inf when the shapes differ or a is not finite."""
    import torch

    xs, ys = tensors(a), tensors(b)
    if len(xs) != len(ys) or any(x.shape != y.shape for x, y in zip(xs, ys, strict=True)):
        return math.inf
    worst = 0.0
    for x, y in zip(xs, ys, strict=True):
        if not torch.isfinite(x).all():
            return math.inf
        scale = max(1.0, float(y.abs().max())) if y.numel() else 1.0
        worst = max(worst, float((x.double() - y.double()).abs().max()) / scale if x.numel() else 0.0)
    return worst


def same(a: dict, b: dict, tolerance: float = 1e-5) -> bool:
    """Whether two outputs agree tensor by tensor, NaN where NaN: how a submission is matched to a known mistake."""
    import torch

    xs, ys = tensors(a), tensors(b)
    return len(xs) == len(ys) and all(
        x.shape == y.shape and torch.allclose(x.double(), y.double(), rtol=tolerance, atol=tolerance * 1e-2,
                                              equal_nan=True) for x, y in zip(xs, ys, strict=True))


def norm_ratio(a: dict, b: dict) -> float:
    """‖a‖ / ‖b‖, each the global norm of every tensor of an output."""
    from gradlab.training import global_norm

    return float(global_norm(tensors(a)) / max(float(global_norm(tensors(b))), 1e-30))
