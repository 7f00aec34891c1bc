# gradlab-exercise: ddp.accumulated_grad
# corpus: right
# mistake: none: torch.split(x, sizes) for the parts, reduction='sum' / B, and .grad cleared with p.grad = None.
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def accumulated_grad(model, x, y, sizes):
    for p in model.parameters():
        p.grad = None
    B = x.shape[0]
    for xb, yb in zip(x.split(sizes), y.split(sizes)):
        (F.cross_entropy(model(xb), yb, reduction="sum") / B).backward()
    return [p.grad for p in model.parameters()]
