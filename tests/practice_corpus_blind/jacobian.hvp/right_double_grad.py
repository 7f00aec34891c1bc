"""gradlab exercise jacobian.hvp (level 3): a Hessian-vector product H v by double backward.

Write it yourself: this exercise is to write what torch.autograd.functional.hvp,
torch.autograd.functional.vhp, torch.autograd.functional.hessian, torch.func.hessian,
torch.autograd.functional.jacobian, torch.func.jacrev, torch.func.jacfwd, torch.func.vmap, torch.vmap do for
you, so calling one of them fails a check of its own.

Write the body of hvp below, then check it:

    gradlab check hvp.py

and see your backward pass beside the reference's (the first node whose gradient differs marked):

    gradlab check hvp.py --graph hvp.html
"""

# gradlab-exercise: jacobian.hvp
import torch
import torch.nn.functional as F


def hvp(f, x, v):
    """H v = ∂/∂x ⟨∇f(x), v⟩ for a scalar f: differentiate the gradient a second time, along v.

    g = autograd.grad(f(x), x, create_graph=True)[0]   the gradient, with a graph of its own
    H v = autograd.grad(g, x, grad_outputs=v)[0]        its vector-Jacobian product with v (H is symmetric)

    Shapes: f maps x (n,) float64 to a 0-dim tensor; x arrives without requires_grad; v (n,). Return H v of
    shape (n,). torch.autograd.functional.hvp computes this (the check compares yours with it, and calling
    it, vhp, a library Hessian or Jacobian, or vmap fails a check of its own): differentiate twice yourself,
    with torch.autograd.grad. H is never built: the check counts the backward passes through the gradient
    (each autograd.grad or .backward call one, a batched call n), and H v takes one. TF-1: tf.hessians(ys,
    xs) built the whole Hessian by differentiating tf.gradients's output again; H v needs one backward pass
    more than the gradient.
    """
    x = x.detach().requires_grad_(True)
    g, = torch.autograd.grad(f(x), x, create_graph=True)
    Hv, = torch.autograd.grad(g, x, grad_outputs=v)
    return Hv
