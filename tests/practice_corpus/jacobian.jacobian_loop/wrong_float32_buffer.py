# gradlab-exercise: jacobian.jacobian_loop
# corpus: wrong
# mistake: preallocates J with torch.zeros(m, n), which is float32, so a float64 Jacobian loses precision (and comes back float32).
# relation: equals expected in float32; float64 inputs: rounded to float32 (relative error ~1e-8, dtype float32 instead of float64)
import torch
import torch.nn.functional as F


def jacobian_loop(f, x):
    x = x.detach().requires_grad_()
    y = f(x)
    J = torch.zeros(y.shape[0], x.shape[0])
    for i in range(y.shape[0]):
        J[i] = torch.autograd.grad(y[i], x, retain_graph=True)[0]
    return J
