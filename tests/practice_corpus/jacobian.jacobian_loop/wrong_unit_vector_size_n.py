# gradlab-exercise: jacobian.jacobian_loop
# corpus: wrong
# mistake: builds the unit vector e_i with the size of x (n) instead of the size of f(x) (m).
# relation: right when m = n; shape error when m ≠ n
import torch
import torch.nn.functional as F


def jacobian_loop(f, x):
    x = x.detach().requires_grad_()
    y = f(x)
    n = x.shape[0]
    rows = []
    for i in range(y.shape[0]):
        e = torch.zeros(n, dtype=x.dtype)
        e[i] = 1.0
        rows.append(torch.autograd.grad(y, x, grad_outputs=e, retain_graph=True)[0])
    return torch.stack(rows)
