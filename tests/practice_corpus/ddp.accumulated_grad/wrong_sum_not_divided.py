# gradlab-exercise: ddp.accumulated_grad
# corpus: wrong
# mistake: uses reduction='sum' and forgets to divide by B.
# relation: output = B × expected
import torch
import torch.nn.functional as F


def accumulated_grad(model, x, y, sizes):
    for p in model.parameters():
        p.grad = None
    start = 0
    for n in sizes:
        loss = F.cross_entropy(model(x[start:start + n]), y[start:start + n], reduction="sum")
        loss.backward()
        start += n
    return [p.grad for p in model.parameters()]
