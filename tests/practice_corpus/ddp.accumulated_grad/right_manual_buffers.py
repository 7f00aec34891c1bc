# gradlab-exercise: ddp.accumulated_grad
# corpus: right
# mistake: none: accumulates torch.autograd.grad results in its own buffers, then writes them into .grad (like the TF-1 accumulators).
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def accumulated_grad(model, x, y, sizes):
    params = list(model.parameters())
    acc = [torch.zeros_like(p) for p in params]
    B = x.shape[0]
    start = 0
    for n in sizes:
        part = F.cross_entropy(model(x[start:start + n]), y[start:start + n], reduction="sum") / B
        for a, g in zip(acc, torch.autograd.grad(part, params)):
            a += g
        start += n
    for p, a in zip(params, acc):
        p.grad = a
    return [p.grad for p in params]
