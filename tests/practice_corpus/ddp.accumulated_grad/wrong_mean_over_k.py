# gradlab-exercise: ddp.accumulated_grad
# corpus: wrong
# mistake: divides each micro-batch's mean loss by the number of micro-batches K (the usual gradient-accumulation recipe), which weights every part equally.
# relation: right for equal micro-batches, wrong for unequal (each part weighted 1/K instead of n_k/B)
import torch
import torch.nn.functional as F


def accumulated_grad(model, x, y, sizes):
    model.zero_grad()
    K = len(sizes)
    start = 0
    for n in sizes:
        loss = F.cross_entropy(model(x[start:start + n]), y[start:start + n]) / K
        loss.backward()
        start += n
    return [p.grad for p in model.parameters()]
