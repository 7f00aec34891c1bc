"""Comparisons of tensors the diagnosis of a wrong answer makes (gradlab/practice/judging/): two outputs' closeness
by norm, a factor as a word (2, ½, −1), nested outputs walked into their tensors. Pure functions of tensors."""

from __future__ import annotations

import torch

from gradlab.kit.exercise import same

MATCHES = 1e-5  # a submission "is" a known mistake when its outputs agree with that mistake's this closely
RELATE = 1e-4  # a relation (a scale, the transpose…) holds when what is left is this small next to the expected


def simple(c: float) -> str | None:
    """c when it is a small integer or the reciprocal of one (2, ½, −1): a factor worth naming by itself."""
    for k in range(1, 11):
        if abs(c - k) <= RELATE * k:
            return str(k)
        if abs(c + k) <= RELATE * k:
            return f"−{k}"
        if abs(c - 1 / k) <= RELATE / k:
            return f"1/{k}"
    return None


def flat(out) -> list[torch.Tensor]:
    if isinstance(out, dict):
        return [t for v in out.values() for t in flat(v)]
    if isinstance(out, list | tuple):
        return [t for v in out for t in flat(v)]
    return [out]


def vector(ts: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.detach().reshape(-1).double() for t in ts]) if ts else torch.zeros(0, dtype=torch.float64)


def close(a: torch.Tensor, b: torch.Tensor, tol: float = RELATE) -> bool:
    """‖a − b‖ ≤ tol·‖b‖ (both finite), or both zero."""
    if a.shape != b.shape or not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        return False
    nb = float(b.norm())
    return float((a - b).norm()) <= tol * max(nb, 1e-300) if nb > 0 else float(a.norm()) == 0


def same_key(a, b, tol: float = MATCHES) -> bool:
    return same({"k": a}, {"k": b}, tol)


def nonfinite_where_finite(mine: dict, ref: dict) -> bool:
    """Whether an output of MINE is NaN or inf where REF's is finite (one input's outputs, by key): what a diagnosis
    measures before it speaks of 0/0 or an overflow."""
    return any(a.shape == b.shape and a.is_floating_point() and bool((~a.isfinite() & b.isfinite()).any())
               for key in ref for a, b in zip(flat(mine.get(key, [])), flat(ref[key]), strict=False))
