# gradlab-exercise: jacobian.jacobian_loop
# corpus: wrong
# mistake: loops over range(len(x)) — the number of inputs n — instead of the number of outputs m.
# relation: right when m = n; m > n: missing rows (shape (n, n)); m < n: IndexError
import torch
import torch.nn.functional as F


def jacobian_loop(f, x):
    x = x.detach().requires_grad_()
    out = f(x)
    J = torch.zeros(len(x), len(x), dtype=x.dtype)
    for i in range(len(x)):
        J[i] = torch.autograd.grad(out[i], x, retain_graph=True)[0]
    return J
