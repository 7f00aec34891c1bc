"""The reference and the known mistakes of mse_grad, on gradlab's side only (never in the sandbox)."""

import torch

from gradlab.kit.exercise import Checks, Mistake

from .harness import HARNESSES


def reference(w, b, X, y):
    """Autograd's gradient of the mean squared error: what a right answer must equal."""
    w, b = w.clone().requires_grad_(True), b.clone().requires_grad_(True)
    cost = ((X @ w + b - y) ** 2).mean()
    return torch.autograd.grad(cost, [w, b])


def _no_two(w, b, X, y):
    r = X @ w + b - y
    return X.T @ r / len(y), r.mean()


def _sum(w, b, X, y):
    r = X @ w + b - y
    return 2 * X.T @ r, 2 * r.sum()


CHECKS = {"mse_grad": Checks(
    harness=HARNESSES["mse_grad"], reference=reference,
    mistakes=[Mistake(name="the 2 forgotten", fn=_no_two,
                      diagnosis="d(r²)/dr = 2r, so both gradients are half of what they should be"),
              Mistake(name="summed, not averaged", fn=_sum,
                      diagnosis="the cost is the mean over the N samples, so divide by N")],
    names={"gw": "∂cost/∂w", "gb": "∂cost/∂b"})}
