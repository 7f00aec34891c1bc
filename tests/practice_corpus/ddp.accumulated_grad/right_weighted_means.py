# gradlab-exercise: ddp.accumulated_grad
# corpus: right
# mistake: none: each part's mean loss weighted by n_k/B (the docstring's second form), cumulative offsets from itertools.accumulate, .grad zeroed in place.
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F
import itertools


def accumulated_grad(model, x, y, sizes):
    for p in model.parameters():
        if p.grad is not None:
            p.grad.zero_()
    B = sum(sizes)
    ends = list(itertools.accumulate(sizes))
    for n, end in zip(sizes, ends):
        sl = slice(end - n, end)
        loss = F.cross_entropy(model(x[sl]), y[sl]) * (n / B)
        loss.backward()
    return [p.grad for p in model.parameters()]
