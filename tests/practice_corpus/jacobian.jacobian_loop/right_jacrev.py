# gradlab-exercise: jacobian.jacobian_loop
# corpus: right
# mistake: none: torch.func.jacrev (vmap over vector-Jacobian products) instead of a Python loop.
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def jacobian_loop(f, x):
    return torch.func.jacrev(f)(x)
