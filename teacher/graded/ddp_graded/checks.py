"""ddp_graded.accumulate on gradlab's side only (never in the sandbox): the reference (autograd through the whole
batch's F.cross_entropy, float64) and the known mistakes, each with what to tell its author."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from gradlab.kit.exercise import Checks, Mistake, norm_ratio

from .harness import HARNESSES, PAD, model_of


def reference(model, x, y, sizes):
    """The whole batch at once: autograd through F.cross_entropy(model(x), y), the mean over the counted targets
    (gradlab's side computes it through _expected: through the harness, its one forward would be refused)."""
    return list(torch.autograd.grad(F.cross_entropy(model(x), y), list(model.parameters())))


def _expected(case: dict) -> dict:
    return {"grads": reference(model_of(case["weights"]), case["x"], case["y"], case["sizes"])}


def _parts(loss_of):
    """Accumulation over x.split(sizes) with micro-batch k's loss LOSS_OF(logits, y_k, x, y, sizes), .grad zeroed."""
    def accumulate(model, x, y, sizes):
        model.zero_grad()
        for xk, yk in zip(x.split(sizes), y.split(sizes), strict=True):
            loss_of(model(xk), yk, x, y, sizes).backward()
        return [p.grad for p in model.parameters()]
    return accumulate


def _counted(y) -> int:
    return int((y != PAD).sum())


_by_b = _parts(lambda z, yk, x, y, sizes: F.cross_entropy(z, yk, reduction="sum") / len(x))
_mean_k = _parts(lambda z, yk, x, y, sizes: F.cross_entropy(z, yk) / len(sizes))
_mean_nk = _parts(lambda z, yk, x, y, sizes: F.cross_entropy(z, yk) * len(yk) / len(x))
_mean_sum = _parts(lambda z, yk, x, y, sizes: F.cross_entropy(z, yk))


def _no_zero_grad(model, x, y, sizes):
    for xk, yk in zip(x.split(sizes), y.split(sizes), strict=True):
        (F.cross_entropy(model(xk), yk, reduction="sum") / _counted(y)).backward()
    return [p.grad for p in model.parameters()]


CHECKS = {"accumulate": Checks(
    harness=HARNESSES["accumulate"], reference=reference, expected=_expected,
    mistakes=[
        Mistake(name="divided by B", fn=_by_b,
                diagnosis=lambda s, r: f"you divided the summed loss by B, the batch's size, which counts the padding "
                                       f"too: where targets are −100 your gradient is a fraction of the right one "
                                       f"({norm_ratio(s, r):.3g} of it on the first input that fails, M/B there). "
                                       f"Divide by M, the number of targets y ≠ −100 in the whole batch"),
        Mistake(name="each part's mean / K", fn=_mean_k,
                diagnosis="each micro-batch's loss was its own mean (over its own counted targets), then divided by "
                          "K: a part with few counted targets weighs as much as one with many, and a part of padding "
                          "only (its mean 0/0 = NaN, its gradient 0) still counts in K. Sum the per-target losses "
                          "(reduction='sum') and divide by M, the whole batch's count of targets y ≠ −100"),
        Mistake(name="each part's mean × n_k/B", fn=_mean_nk,
                diagnosis="you weighted each micro-batch's mean by its size, n_k/B, which is right when every target "
                          "counts (ddp.accumulated_grad's rule): here a part's mean is over its own m_k counted "
                          "targets, so its weight is m_k/M. Sum the per-target losses (reduction='sum') and divide by "
                          "M, the whole batch's count of targets y ≠ −100"),
        Mistake(name="the parts' means added", fn=_mean_sum,
                diagnosis=lambda s, r: f"you added the micro-batches' mean losses with no weights (your gradient's "
                                       f"norm is {norm_ratio(s, r):.3g} times the right one's on the first input "
                                       f"that fails): each part weighs m_k/M. "
                                       f"Sum the per-target losses (reduction='sum') and divide by M, the whole "
                                       f"batch's count of targets y ≠ −100"),
        Mistake(name="no zero_grad", fn=_no_zero_grad,
                diagnosis="your gradients piled up on what .grad held before: call model.zero_grad() (or set each "
                          ".grad to None) before the first backward"),
    ],
    names={"grads": "your accumulated gradient"},
    quantities=lambda case: [("B", len(case["y"]), "the batch size"),
                             ("M", _counted(case["y"]), "the number of counted targets")],
    hints={("*", "family", "padding:without padding"):
           "right without padding, wrong with it: the mean is over the M counted targets (y ≠ −100), not the B "
           "samples: sum the per-target losses and divide by M"})}
