# gradlab-exercise: ddp.accumulated_grad
# corpus: wrong
# mistake: collects torch.autograd.grad of each part and returns the last part's gradients (forgot to sum them), leaving .grad untouched.
# relation: output = (n_K/B)·ḡ_K, the last part's contribution only; .grad unchanged
import torch
import torch.nn.functional as F


def accumulated_grad(model, x, y, sizes):
    B = x.shape[0]
    params = list(model.parameters())
    start = 0
    for n in sizes:
        loss = F.cross_entropy(model(x[start:start + n]), y[start:start + n], reduction="sum") / B
        grads = torch.autograd.grad(loss, params)
        start += n
    return list(grads)
