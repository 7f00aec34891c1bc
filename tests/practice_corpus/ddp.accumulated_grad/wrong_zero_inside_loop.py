# gradlab-exercise: ddp.accumulated_grad
# corpus: wrong
# mistake: calls zero_grad inside the loop, before each part's backward, so only the last micro-batch survives.
# relation: output = (n_K/B)·ḡ_K, the last part's contribution only
import torch
import torch.nn.functional as F


def accumulated_grad(model, x, y, sizes):
    B = len(x)
    start = 0
    for n in sizes:
        model.zero_grad()
        loss = F.cross_entropy(model(x[start:start + n]), y[start:start + n], reduction="sum") / B
        loss.backward()
        start += n
    return [p.grad for p in model.parameters()]
