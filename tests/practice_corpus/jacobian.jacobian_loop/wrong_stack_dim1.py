# gradlab-exercise: jacobian.jacobian_loop
# corpus: wrong
# mistake: stacks the rows along dim=1, giving the (n, m) transpose of J.
# relation: transpose of expected
import torch
import torch.nn.functional as F


def jacobian_loop(f, x):
    x = x.detach().requires_grad_()
    y = f(x)
    cols = [torch.autograd.grad(y[i], x, retain_graph=True)[0] for i in range(len(y))]
    return torch.stack(cols, dim=1)
