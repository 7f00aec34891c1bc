# gradlab-exercise: jacobian.jacobian_loop
# corpus: wrong
# mistake: calls autograd.grad repeatedly on one graph without retain_graph=True: the graph is freed after the first row.
# relation: crashes on the second row ('Trying to backward through the graph a second time') for any f whose graph saves tensors; right only for m = 1
import torch
import torch.nn.functional as F


def jacobian_loop(f, x):
    x = x.detach().requires_grad_()
    y = f(x)
    J = []
    for i in range(y.numel()):
        J.append(torch.autograd.grad(y[i], x)[0])
    return torch.stack(J)
