"""gradlab exercise jacobian.jacobian_loop (level 2): the full Jacobian of f at x by a loop of vector-Jacobian
products, one row per output.

Write it yourself: this exercise is to write what torch.autograd.functional.jacobian, torch.func.jacrev,
torch.func.jacfwd do for you, so calling one of them fails a check of its own.

Write the body of jacobian_loop below, then check it:

    gradlab check jacobian_loop.py
"""

# gradlab-exercise: jacobian.jacobian_loop
import torch
import torch.nn.functional as F


def jacobian_loop(f, x):
    """J[i, j] = ∂f_i/∂x_j, one row per output: row i = autograd.grad(f(x)[i], x) (a vector-Jacobian product
    with the unit vector e_i). tf.gradients(f(x), x) returned Σ_i ∂f_i/∂x: the rows summed.

    Shapes: f maps a tensor of shape (n,) to one of shape (m,); x (n,). Return J of shape (m, n).
    """
    return torch.autograd.functional.jacobian(f, x)
