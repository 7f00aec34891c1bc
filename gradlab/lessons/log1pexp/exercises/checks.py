"""The exercises of `gradlab log1pexp`, on gradlab's side: each one's reference answer, its known mistakes (a realistic
wrong implementation and what to tell its author) and what the diagnosis measures. Never imported beside a
submission.

Why the NaNs are what the diagnoses say (the sources gradlab/lessons/log1pexp/lesson.py quotes, and its own
measurements): autograd differentiates log(1 + eˣ) link by link, and where eˣ is inf the chain multiplies 0 by inf
(exp's backward), which is NaN; torch.where passes a zero gradient to the branch it did not pick, and that branch's
exp then gives 0 · inf; the TF-1 tutorial's custom gradient was right to second order in TF-1's graph (e was the
graph tensor tf.exp(x)), and a PyTorch port that keeps e from forward on ctx loses it (e is a constant to autograd)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from gradlab.kit.exercise import Checks, Mistake, Variant
from gradlab.lessons.log1pexp.exercises.harness import HARNESSES, POINTS

SOFTPLUS_THRESHOLD = ("F.softplus's threshold: above x = 20 it returns x itself (torch/nn/functional.py, softplus: "
                      "\"reverts to the linear function when input × β > threshold\", threshold=20), leaving out "
                      "log1p(e^−x) < 2.07e-9")


def _x_spot(case: dict, key: str):
    return case["x"], "x"


# ------------------------------------------------------------------------------------------------------ softplus

def _stable(x):
    return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))


def _softplus_reference(x):
    """log(1 + eˣ) as torch.logaddexp(x, 0), differentiated by autograd (a student's right answer)."""
    return torch.logaddexp(x, torch.zeros_like(x))


def _softplus_expected(case: dict) -> dict:
    """The closed forms: value max(x, 0) + log1p(e^−|x|), gradient dy · σ(x)."""
    return {"value": _stable(case["x"]), "gradient": case["dy"] * torch.sigmoid(case["x"])}


def _softplus_naive(x):
    return torch.log(1 + torch.exp(x))


def _softplus_where(x):
    return torch.where(x > 0, x + torch.log1p(torch.exp(-x)), torch.log1p(torch.exp(x)))


def _softplus_threshold(x):
    return torch.where(x > 20, x, torch.log1p(torch.exp(x)))  # F.softplus's threshold, by torch.where


def _softplus_kink(x):
    return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))  # autograd: d clamp/dx = d|x|/dx = 0 at x = 0


def _softplus_library(x):
    return F.softplus(x)


SOFTPLUS = Checks(
    harness=HARNESSES["softplus"], reference=_softplus_reference, expected=_softplus_expected,
    mistakes=[
        Mistake(name="naive", fn=_softplus_naive,
                diagnosis="log(1 + exp(x)) as written: exp(x) is inf in float32 from x ≈ 88.7, so the value is inf, "
                          "and autograd's chain multiplies 0 by inf there (NaN). Use torch.logaddexp(x, "
                          "torch.zeros_like(x))"),
        Mistake(name="where", fn=_softplus_where,
                diagnosis="torch.where picks the stable branch for the value, but autograd differentiates both: the "
                          "branch it did not pick gets a zero gradient, and its exp(±x) is inf at |x| ≥ 89 in float32, "
                          "so exp's backward makes 0 · inf = NaN. Make both branches finite (clamp the argument of the "
                          "unused one), or use torch.logaddexp(x, 0)"),
        Mistake(name="where with a threshold", fn=_softplus_threshold,
                diagnosis="torch.where(x > 20, x, log1p(exp(x))) has the right value, but autograd differentiates "
                          "both branches: the unused log1p(exp(x)) has exp(x) = inf at x ≥ 89 in float32 (≥ 710 in "
                          "float64), and its zero upstream gradient times inf is NaN. Clamp the unused branch's "
                          "argument (exp(x.clamp(max=20))), or use torch.logaddexp(x, 0)"),
        Mistake(name="kink at 0", fn=_softplus_kink,
                diagnosis="max(x, 0) + log1p(exp(−|x|)) is right in value, but autograd takes d clamp(x, min=0)/dx = 0 "
                          "and d|x|/dx = 0 at x = 0 (so does relu), so the gradient there is 0 instead of σ(0) = 1/2. "
                          "Use torch.logaddexp(x, 0) (or an autograd.Function whose backward is dy · sigmoid(x))"),
    ],
    names={"value": "the value", "gradient": "the gradient"},
    quantities=lambda case: [("dy", case["dy"], "the upstream gradient")],
    spot=_x_spot,
    hints={("gradient", "differs", "only at x = 0"): "at x = 0 autograd picks one value of each kink's derivative "
           "(|x|, clamp and relu give 0, torch.maximum ½): the formula's kink shows there",
           ("*", "nonfinite", "*"): "an exp in your formula overflows at large |x| (inf in float32 from 88.7), and "
                                    "autograd's chain multiplies it by 0: keep every exp's argument ≤ 0"},
    variants=[Variant(what=SOFTPLUS_THRESHOLD, fn=_softplus_library)])


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
    """The tutorial's custom gradient with TF-1's derivatives: e recomputed from the saved x in backward."""

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


class _SigmoidSaved(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(torch.sigmoid(x))  # made in forward: a constant to autograd
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, dy):
        s, = ctx.saved_tensors
        return dy * s


class _SoftplusForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return F.softplus(x)

    @staticmethod
    def backward(ctx, dy):
        x, = ctx.saved_tensors
        return dy * torch.sigmoid(x)


def _lpe_extra(outs: list[dict], cases: list[dict]) -> list[float]:
    at = POINTS.index(100.0)
    bad = sum(int(not math.isfinite(float(o[k][at]))) for o, c in zip(outs, cases, strict=True)
              if c["kind"] == "float32" for k in ("value", "gradient"))
    return [bad]


LOG1PEXP = Checks(
    harness=HARNESSES["Log1pExp"], reference=_StableLog1pExp,
    mistakes=[
        Mistake(name="naive", fn=_NaiveLog1pExp,
                diagnosis="your forward is log(1 + eˣ) as written: in float32 eˣ is inf from x ≈ 88.7, so the value is "
                          "log(1 + inf) = inf, and your backward's eˣ/(1 + eˣ) is inf/inf = NaN there. Compute max(x, "
                          "0) + log1p(exp(−|x|)), and the gradient as torch.sigmoid(x)"),
        Mistake(name="e kept on ctx", fn=_PortEOnCtx,
                diagnosis="the tutorial's custom gradient, ported with e = eˣ computed in forward and kept on ctx: the "
                          "gradient is finite, but the value is still log(1 + inf) = inf, and autograd recorded "
                          "nothing in forward, so e is a constant to it: a second derivative then raises ('does not "
                          "require grad') or silently drops the f'' term, and the check measures it as 0 (in TF-1 e "
                          "was the graph tensor Exp(x), so the tutorial got it right there). Compute the value stably "
                          "and the backward from the saved x with torch ops (dy · torch.sigmoid(x))"),
        Mistake(name="value inf", fn=_FaithfulPort,
                diagnosis="the tutorial's custom gradient, ported faithfully (e rebuilt from x in backward): the first "
                          "and second derivatives are right where e is finite, but the value log(1 + eˣ) is inf once "
                          "eˣ overflows (x ≥ 89 in float32), and there the second derivative is NaN (0 · inf in exp's "
                          "backward). Compute max(x, 0) + log1p(exp(−|x|)) and dy · torch.sigmoid(x)"),
        Mistake(name="exp in the backward", fn=_StableForwardExpBackward,
                diagnosis="the value is right, but the backward's eˣ/(1 + eˣ) is inf/inf = NaN once eˣ overflows: use "
                          "torch.sigmoid(x)"),
        # its name says what is measured: sigmoid(x) saved from forward, sigmoid(x.detach()) in backward and sigmoid(x)
        # under no_grad give the same outputs (tests/test_misfit.py), so the values cannot tell which the file does
        Mistake(name="second derivative 0", fn=_SigmoidSaved,
                diagnosis="the value and the gradient are right, but the second derivative is 0 on every input "
                          "(measured): your backward is a constant to autograd. sigmoid(x) saved from forward, "
                          "sigmoid(x.detach()) in backward and sigmoid(x) under torch.no_grad() each give these values "
                          "(they cannot be told apart from them): each is a number, not a function of x. Save x, and "
                          "compute dy * torch.sigmoid(x) in backward"),
    ],
    extra=_lpe_extra,
    names={"value": "the value", "gradient": "the gradient", "second": "the second derivative"},
    quantities=lambda case: [("dy", case["dy"], "the upstream gradient")],
    spot=_x_spot,
    hints={("*", "family", "upstream:when dy = 1"): "summing the output (y.sum().backward()) sends dy = 1, which "
                                                    "hides a backward that ignores dy",
           ("gradient", "plus", "dy − expected"): "dy − dy·σ(x) = dy·σ(−x): your backward returns sigmoid(−x) (or "
                                                  "1 − sigmoid(x)), the derivative of log(1 + e^−x); it is dy · "
                                                  "sigmoid(x)",
           ("gradient", "scale", "expected / dy"): "backward(ctx, dy) must return dy · sigmoid(x): multiply by the "
                                                   "upstream gradient dy (the chain rule)",
           ("second", "differs", "only at x = 0"): "at x = 0 autograd's derivative of |x| is 0 (and torch.where's "
                                                   "branches meet): a backward built from exp(−|x|) loses a term "
                                                   "there. torch.sigmoid(x) has no kink",
           ("value", "differs", "where x < 0"): "for x < 0 your value is off: max(x, 0) + log1p(exp(−|x|)) needs "
                                                "the absolute value inside exp",
           ("value", "nonfinite", "*"): "your value overflows: in float32 exp(x) is inf from x ≈ 88.7 (exp(−x) for "
                                        "x ≤ −89): compute max(x, 0) + log1p(exp(−|x|)), whose exp never exceeds 1",
           ("second", "nonfinite", "*"): "your backward's formula overflows where autograd differentiates it: an "
                                         "exp(±x) that is inf there (torch.where's unused branch included: it gets a "
                                         "zero gradient, and exp's backward makes 0 · inf = NaN). Return dy · "
                                         "torch.sigmoid(x)"},
    variants=[Variant(what=SOFTPLUS_THRESHOLD, fn=_SoftplusForward)])


CHECKS: dict[str, Checks] = {
    "softplus": SOFTPLUS,
    "Log1pExp": LOG1PEXP,
}
