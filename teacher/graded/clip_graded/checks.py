"""The reference and the known mistakes of clip_by_norm, on gradlab's side only (never in the sandbox).

The reference is the closed form, in float64, rounded to the input's precision: per slice, with n its norm and
s = clip_norm / max(n, clip_norm), the value is s·t and the gradient for an upstream dy is s·(dy − t·⟨t, dy⟩/n²) where
n > clip_norm (d(t/n)/dt = (I − t tᵀ/n²)/n), dy where n ≤ clip_norm (the slice is left as it is). The suite checks it
against autograd through TF-1's own formula (tests/test_graded.py)."""

import torch

from gradlab.kit.exercise import Checks, Mistake, Relation
from gradlab.kit.measure import nonfinite_where_finite

from .harness import HARNESSES


def _norms(t: torch.Tensor, axes) -> torch.Tensor:
    return t.double().pow(2).sum(dim=tuple(axes), keepdim=True).sqrt()


def _expected(case: dict) -> dict:
    t, dy, c, axes = case["t"].double(), case["dy"].double(), case["clip_norm"], tuple(case["axes"])
    n = _norms(t, axes)
    over = n > c
    s = torch.where(over, c / torch.where(over, n, 1.0), 1.0)
    inner = (t * dy).sum(dim=axes, keepdim=True)
    gradient = torch.where(over, s * (dy - t * inner / torch.where(over, n * n, 1.0)), dy)
    return {"value": (s * t).to(case["t"].dtype), "gradient": gradient.to(case["t"].dtype)}


def _tf_formula(t, clip_norm, axes):
    """TF-1's clip_by_norm, op for op (the two-tap tf.where): what the suite checks the closed form against."""
    l2sum = (t * t).sum(dim=axes, keepdim=True)
    pred = l2sum > 0
    l2norm = torch.where(pred, torch.sqrt(torch.where(pred, l2sum, torch.ones_like(l2sum))), l2sum)
    return t * clip_norm / torch.maximum(l2norm, l2norm.new_tensor(clip_norm))


def _whole(t, clip_norm, axes):
    return t * clip_norm / torch.clamp(torch.linalg.vector_norm(t), min=clip_norm)


def _sqrt_at_zero(t, clip_norm, axes):
    n = (t * t).sum(dim=axes, keepdim=True).sqrt()
    return t * clip_norm / torch.maximum(n, n.new_tensor(clip_norm))


def _complement(t, clip_norm, axes):
    kept = tuple(d % t.dim() for d in axes)
    other = tuple(d for d in range(t.dim()) if d not in kept)
    n = torch.linalg.vector_norm(t, dim=other, keepdim=True) if other else t.abs()
    return t * clip_norm / torch.clamp(n, min=clip_norm)


def _always(t, clip_norm, axes):
    return t * clip_norm / torch.linalg.vector_norm(t, dim=axes, keepdim=True)


def _always_told(student: dict, ref: dict) -> str:
    """The words for "always rescaled": 0/0 on a zero slice said only where the student's output shows a NaN or inf
    where the expected is finite (a guard such as clamp(n², min=1e-30) keeps it finite)."""
    nan = " (and 0/0 on a zero slice)" if nonfinite_where_finite(student, ref) else ""
    return (f"you scaled every slice to clip_norm, the ones below it too{nan}: "
            "divide by max(n, clip_norm), so that a slice whose norm is at most clip_norm stays as it is")


def _detached(t, clip_norm, axes):
    n = torch.linalg.vector_norm(t, dim=axes, keepdim=True).detach()
    return t * clip_norm / torch.clamp(n, min=clip_norm)


def _by_value(t, clip_norm, axes):
    return t.clamp(-clip_norm, clip_norm)


def _squared(t, clip_norm, axes):
    return t * clip_norm / torch.clamp((t * t).sum(dim=axes, keepdim=True), min=clip_norm)


def _extra(outs: list[dict], cases: list[dict]) -> list[float]:
    return [max(float((_norms(o["value"], c["axes"]) / c["clip_norm"]).max()) for o, c in zip(outs, cases,
                                                                                              strict=True))]


def _norm_spot(case: dict, key: str):
    """Where a difference is, by the norm of the slice it is in (only at n = 0: an all-zero slice)."""
    return _norms(case["t"], case["axes"]).expand(case["t"].shape), "the norm n of its slice"


CHECKS = {"clip_by_norm": Checks(
    harness=HARNESSES["clip_by_norm"], reference=_tf_formula, expected=_expected,
    mistakes=[
        Mistake(name="one norm for the whole tensor", fn=_whole,
                diagnosis="you took one norm of the whole tensor (tf.clip_by_norm without axes, or clip.global_norm "
                          "of [t]): with axes, each slice has its own norm, sqrt(Σ over the axes of t²) with those "
                          "dimensions kept (keepdim=True), and each slice is scaled by its own factor. Right only "
                          "where axes holds every dimension"),
        Mistake(name="NaN at a zero slice", fn=_sqrt_at_zero,
                diagnosis="the value is right, but the gradient is NaN where a slice is all zero (measured; "
                          "elsewhere it is right): on that slice's path autograd meets 0 · inf or 0/0: sqrt's "
                          "derivative at n = 0 is inf, and a division by n is 0/0 there, even in torch.where's unused "
                          "branch (autograd differentiates both branches). Make both finite at 0: take the root of a "
                          "safe value (TF-1's \"two-tap tf.where trick\": where(s > 0, sqrt(where(s > 0, s, 1)), s)) "
                          "and divide by max(n, clip_norm), never by n alone"),
        Mistake(name="always rescaled", fn=_always,
                diagnosis=_always_told),
        Mistake(name="norm detached", fn=_detached,
                diagnosis="the value is right, but the gradient of a clipped slice misses the norm's own "
                          "derivative: .detach(), .item(), float() or torch.no_grad() made n a constant to autograd. "
                          "t/n has the derivative (I − t tᵀ/n²)/n: keep n in the graph"),
        Mistake(name="by value", fn=_by_value,
                diagnosis="you clipped each element to ±clip_norm (tf.clip_by_value): that changes a slice's "
                          "direction; scale each slice by one factor, clip_norm / max(n, clip_norm)"),
        Mistake(name="no square root", fn=_squared,
                diagnosis="you divided by Σ t², the squared norm: n = sqrt(Σ over the axes of t²)"),
    ],
    relations=[Relation(what="the tensor clipped with the norm over the dimensions not in axes (axes read as the "
                        "dimensions kept)", fn=_complement, hint="axes are the dimensions the norm sums over: "
                        "t.pow(2).sum(dim=axes, keepdim=True)")],
    extra=_extra,
    names={"value": "your clipped tensor", "gradient": "autograd's gradient of it"},
    spot=_norm_spot,
    hints={("*", "nonfinite", "*"): "NaN: a square root or a division at a slice that is all zero (0/0, or sqrt's "
                                    "infinite derivative at 0 times 0)"},
    errors=[("must match the size of tensor", "the norm lost the reduced dimensions, so it does not broadcast "
             "against t: keep them, t.pow(2).sum(dim=axes, keepdim=True)")],
    rule_hints=["a slice is longer than clip_norm after your clipping: scale it by clip_norm / max(n, clip_norm)"])}
