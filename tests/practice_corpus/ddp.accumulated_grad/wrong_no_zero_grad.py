# gradlab-exercise: ddp.accumulated_grad
# corpus: wrong
# mistake: never clears .grad before accumulating, so whatever .grad held on entry is added to the result.
# relation: output = stale .grad + expected; right only when .grad is None/zero on entry
import torch
import torch.nn.functional as F


def accumulated_grad(model, x, y, sizes):
    B = x.shape[0]
    start = 0
    for n in sizes:
        xb, yb = x[start:start + n], y[start:start + n]
        loss = F.cross_entropy(model(xb), yb, reduction="sum") / B
        loss.backward()
        start += n
    return [p.grad for p in model.parameters()]
