"""The exercises of `gradlab mnist`, on gradlab's side: each one's reference answer, its known mistakes (a realistic
wrong implementation and what to tell its author) and what its checks claim. Never imported beside a submission."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from gradlab.lessons.mnist.exercises.harness import HARNESSES
from gradlab.practice.exercise import Checks, Mistake
from gradlab.training import cross_entropy

# ------------------------------------------------------------------------------------------------------ sgd_step

def _sgd_reference(W, b, x, y, lr):
    """torch.optim.SGD's step from the same weights: the lesson's claim is that the hand-written step equals it."""
    Wp, bp = torch.nn.Parameter(W.detach().clone()), torch.nn.Parameter(b.detach().clone())
    opt = torch.optim.SGD([Wp, bp], lr=lr)
    opt.zero_grad()
    cross_entropy(x @ Wp + bp, y).backward()
    opt.step()
    return Wp.detach(), bp.detach()


def _sgd_uphill(W, b, x, y, lr):
    gW, gb = torch.autograd.grad(cross_entropy(x @ W + b, y), [W, b])
    return (W + lr * gW).detach(), (b + lr * gb).detach()


def _sgd_summed(W, b, x, y, lr):
    gW, gb = torch.autograd.grad(-(y * F.log_softmax(x @ W + b, dim=1)).sum(), [W, b])
    return (W - lr * gW).detach(), (b - lr * gb).detach()


def _sgd_b_forgotten(W, b, x, y, lr):
    gW, _ = torch.autograd.grad(cross_entropy(x @ W + b, y), [W, b])
    return (W - lr * gW).detach(), b.detach().clone()


SGD = Checks(
    harness=HARNESSES["sgd_step"], reference=_sgd_reference,
    mistakes=[
        Mistake("uphill", _sgd_uphill, lambda s, r: "your step goes uphill: the cost rises. Gradient descent moves "
                "against the gradient: W − lr·g, not W + lr·g"),
        Mistake("summed cost", _sgd_summed, lambda s, r: "your step is B times too large: the cost is the mean over "
                "the batch (.mean() of the per-sample costs), not their sum"),
        Mistake("b forgotten", _sgd_b_forgotten, lambda s, r: "b did not move: take its gradient too and return "
                "b − lr·∂cost/∂b"),
    ],
    claims={"step": ("your step ≡ torch.optim.SGD's step from the same weights (max relative |Δ| over the inputs)",
                     1e-5),
            "train": ("20 training steps with your step ≡ with torch.optim.SGD (max relative |Δ| of W, b)", 1e-5)})



# -------------------------------------------------------------------------------------------------- softmax_grad

def _grad_reference(W, b, x, y):
    """autograd's gradient of the same cost: the lesson's claim is that the hand-derived one equals it."""
    Wg, bg = W.detach().clone().requires_grad_(True), b.detach().clone().requires_grad_(True)
    return torch.autograd.grad(cross_entropy(x @ Wg + bg, y), [Wg, bg])


def _grad_no_b(W, b, x, y):
    d = torch.softmax(x @ W + b, dim=1) - y  # p − y, not divided by B: ∂W = xᵀd is B× too large, ∂b = mean d is right
    return x.T @ d, d.mean(dim=0)


def _grad_uphill(W, b, x, y):
    d = (y - torch.softmax(x @ W + b, dim=1)) / len(x)
    return x.T @ d, d.sum(dim=0)


def _grad_b_summed(W, b, x, y):
    d = torch.softmax(x @ W + b, dim=1) - y
    return x.T @ d / len(x), d.sum(dim=0)


GRAD = Checks(
    harness=HARNESSES["softmax_grad"], reference=_grad_reference,
    mistakes=[
        Mistake("∂W's /B forgotten", _grad_no_b, lambda s, r: "∂cost/∂W is B times too large (your ∂cost/∂b, a "
                "mean over the batch, is right): xᵀ(p − y) sums over the B samples and the cost is their mean, so "
                "∂cost/∂W = xᵀ(p − y)/B"),
        Mistake("sign", _grad_uphill, lambda s, r: "your gradient has the wrong sign: ∂cost/∂z = p − y (the "
                "prediction minus the label), not y − p"),
        Mistake("∂b summed", _grad_b_summed, lambda s, r: "∂cost/∂W is right but ∂cost/∂b is B times too large: "
                "it is the mean of (p − y) over the batch, not its sum"),
    ],
    claims={"grad": ("your hand-derived gradient ≡ autograd's (max relative |Δ| over the inputs)", 1e-5)})


CHECKS: dict[str, Checks] = {
    "sgd_step": SGD,
    "softmax_grad": GRAD,
}
