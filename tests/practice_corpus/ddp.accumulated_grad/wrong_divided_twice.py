# gradlab-exercise: ddp.accumulated_grad
# corpus: wrong
# mistake: divides the micro-batch mean by B (mixing the two recipes): each part is scaled by 1/(n_k·B) instead of 1/B.
# relation: output = Σ_k ḡ_k/B; = (K/B) × expected for equal parts, wrongly weighted for unequal
import torch
import torch.nn.functional as F


def accumulated_grad(model, x, y, sizes):
    model.zero_grad()
    B = x.shape[0]
    for xb, yb in zip(torch.split(x, sizes), torch.split(y, sizes)):
        loss = F.cross_entropy(model(xb), yb) / B
        loss.backward()
    return [p.grad for p in model.parameters()]
