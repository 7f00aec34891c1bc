# gradlab-exercise: ddp.accumulated_grad
# corpus: wrong
# mistake: back-propagates each micro-batch's mean loss (F.cross_entropy's default) without weighting: the sum of K means.
# relation: output = Σ_k ḡ_k; = K × expected for equal micro-batches, wrongly weighted for unequal
import torch
import torch.nn.functional as F


def accumulated_grad(model, x, y, sizes):
    model.zero_grad()
    i = 0
    for n in sizes:
        F.cross_entropy(model(x[i:i + n]), y[i:i + n]).backward()
        i += n
    return [p.grad for p in model.parameters()]
