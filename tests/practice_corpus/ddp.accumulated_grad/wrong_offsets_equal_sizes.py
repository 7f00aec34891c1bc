# gradlab-exercise: ddp.accumulated_grad
# corpus: wrong
# mistake: slices part k as x[k·n_k : (k+1)·n_k], which assumes every part has the same size: with unequal sizes the slices overlap or skip samples.
# relation: right for equal micro-batches, wrong for unequal
import torch
import torch.nn.functional as F


def accumulated_grad(model, x, y, sizes):
    model.zero_grad()
    B = x.shape[0]
    for k, n in enumerate(sizes):
        xb = x[k * n:(k + 1) * n]
        yb = y[k * n:(k + 1) * n]
        loss = F.cross_entropy(model(xb), yb) * n / B
        loss.backward()
    return [p.grad for p in model.parameters()]
