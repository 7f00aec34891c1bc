"""The exercises of `gradlab log1pexp`, on gradlab's side: each one's reference answer, its known mistakes (a realistic
wrong implementation and what to tell its author) and what its checks claim. Never imported beside a submission."""

from __future__ import annotations

import math

import torch

from gradlab.lessons.log1pexp.exercises.harness import HARNESSES, POINTS
from gradlab.practice.exercise import Checks, Mistake

# ------------------------------------------------------------------------------------------------------ Log1pExp

class _StableLog1pExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, dy):
        x, = ctx.saved_tensors
        return dy * torch.sigmoid(x)  # differentiable in x: the second derivative is right


class _NaiveLog1pExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log(1 + torch.exp(x))

    @staticmethod
    def backward(ctx, dy):
        x, = ctx.saved_tensors
        return dy * torch.exp(x) / (1 + torch.exp(x))


class _PortEOnCtx(torch.autograd.Function):
    """The tutorial's custom gradient ported with e kept on ctx: autograd recorded nothing in forward, so e is a
    constant and the backward does not depend on x."""

    @staticmethod
    def forward(ctx, x):
        e = torch.exp(x)
        ctx.e = e
        return torch.log(1 + e)

    @staticmethod
    def backward(ctx, dy):
        return dy * (1 - 1 / (1 + ctx.e))


class _FaithfulPort(torch.autograd.Function):
    """The tutorial's custom gradient as TF-1's graph computed it: e rebuilt from the saved x in backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log(1 + torch.exp(x))

    @staticmethod
    def backward(ctx, dy):
        x, = ctx.saved_tensors
        return dy * (1 - 1 / (1 + torch.exp(x)))


class _StableForwardExpBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, dy):
        x, = ctx.saved_tensors
        return dy * torch.exp(x) / (1 + torch.exp(x))


def _lpe_extra(outs: list[dict], cases: list[dict]) -> list[tuple[str, float, float, str]]:
    at = POINTS.index(100.0)
    bad = sum(int(not math.isfinite(float(o[k][at]))) for o, c in zip(outs, cases, strict=True)
              if c["kind"] == "float32" for k in ("value", "gradient"))
    return [("no NaN or inf at x = 100 in float32 (value and gradient; count)", bad, 0, "<=")]


LOG1PEXP = Checks(
    harness=HARNESSES["Log1pExp"], reference=_StableLog1pExp,
    mistakes=[
        Mistake("naive", _NaiveLog1pExp, lambda s, r: "your forward is log(1 + eˣ) as written: in float32 eˣ is "
                "inf from x ≈ 88.7, so the value is log(1 + inf) = inf, and your backward's eˣ/(1 + eˣ) is inf/inf = "
                "NaN there. Compute max(x, 0) + log1p(exp(−|x|)), and the gradient as torch.sigmoid(x)"),
        Mistake("e kept on ctx", _PortEOnCtx, lambda s, r: "the tutorial's custom gradient, ported with e = eˣ "
                "computed in forward and kept on ctx: the gradient is finite, but the value is still log(1 + inf) = "
                "inf, and autograd recorded nothing in forward, so e is a constant to it and the second derivative "
                "comes out 0 (TF-1's graph rebuilt e = tf.exp(x) and got it right). Compute the value stably and the "
                "backward from the saved x with torch ops (dy · torch.sigmoid(x))"),
        Mistake("value inf", _FaithfulPort, lambda s, r: "the tutorial's custom gradient, ported faithfully (e "
                "rebuilt from x in backward): the first and second derivatives are right where e is finite, but the "
                "value log(1 + eˣ) is inf once eˣ overflows (x ≥ 89 in float32), and there the second derivative is "
                "NaN (0 · inf in exp's backward). Compute max(x, 0) + log1p(exp(−|x|)) and dy · torch.sigmoid(x)"),
        Mistake("exp in the backward", _StableForwardExpBackward, lambda s, r: "the value is right, but the "
                "backward's eˣ/(1 + eˣ) is inf/inf = NaN once eˣ overflows: use torch.sigmoid(x)"),
    ],
    claims={"float32": ("float32: your value, gradient and second derivative ≡ the stable reference (max relative "
                        "|Δ|)", 1e-6),
            "float64": ("float64: your value, gradient and second derivative ≡ the stable reference (max relative "
                        "|Δ|)", 1e-12)},
    extra=_lpe_extra)


CHECKS: dict[str, Checks] = {
    "Log1pExp": LOG1PEXP,
}
