# gradlab-exercise: jacobian.jacobian_loop
# corpus: wrong
# mistake: differentiates with respect to x as given, assuming the caller set requires_grad=True; if x arrives without it, autograd.grad fails.
# relation: equals expected if x.requires_grad is True on entry; crashes ('does not require grad') otherwise
import torch
import torch.nn.functional as F


def jacobian_loop(f, x):
    y = f(x)
    return torch.stack([torch.autograd.grad(y[i], x, retain_graph=True)[0] for i in range(y.shape[0])])
