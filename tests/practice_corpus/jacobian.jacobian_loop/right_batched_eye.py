# gradlab-exercise: jacobian.jacobian_loop
# corpus: right
# mistake: none: one autograd.grad call with is_grads_batched=True and the identity matrix as the batch of unit vectors.
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def jacobian_loop(f, x):
    x = x.detach().requires_grad_(True)
    y = f(x)
    eye = torch.eye(y.shape[0], dtype=y.dtype)
    (J,) = torch.autograd.grad(y, x, grad_outputs=eye, is_grads_batched=True)
    return J
