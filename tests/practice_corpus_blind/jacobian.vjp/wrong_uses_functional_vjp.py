"""gradlab exercise jacobian.vjp (level 1): a vector-Jacobian product vᵀJ with one autograd.grad call: what
tf.gradients(ys, xs, grad_ys) computes.

Write it yourself: this exercise is to write what torch.autograd.functional.vjp, torch.func.vjp do for you, so
calling one of them fails a check of its own.

Write the body of vjp below, then check it:

    gradlab check vjp.py
"""

# gradlab-exercise: jacobian.vjp
import torch
import torch.nn.functional as F


def vjp(f, x, v):
    """vᵀJ = Σ_i v_i ∂f_i/∂x, one backward pass: torch.autograd.grad(f(x), x, grad_outputs=v). The full
    Jacobian J (m × n) is never built. tf.gradients(ys, xs) computed this with v = ones (grad_ys=None).

    Shapes: f maps a tensor of shape (n,) to one of shape (m,); x (n,) float64, arriving without
    requires_grad; v (m,). Return vᵀJ, of shape (n,). torch.autograd.functional.vjp computes this (the check
    compares yours with it): use torch.autograd.grad here.
    """
    return torch.autograd.functional.vjp(f, x, v)[1]
