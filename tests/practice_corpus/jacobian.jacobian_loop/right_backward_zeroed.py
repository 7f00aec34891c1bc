# gradlab-exercise: jacobian.jacobian_loop
# corpus: right
# mistake: none: backward() with the unit vector e_i, zeroing x.grad before every row; recomputes f(x) each row instead of retaining the graph.
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def jacobian_loop(f, x):
    x = x.detach().clone().requires_grad_()
    m = f(x).shape[0]
    J = x.new_zeros(m, x.shape[0])
    for i in range(m):
        x.grad = None
        y = f(x)
        e = torch.zeros_like(y)
        e[i] = 1.0
        y.backward(e)
        J[i] = x.grad
    return J
