# gradlab-exercise: mnist.sgd_step
# corpus: wrong
# mistake: log(softmax(z)) is not numerically stable: when a probability underflows to 0, y·log p = 0·(−inf) gives NaN.
# relation: equals expected for moderate logits; NaN (or inf) when some softmax probability underflows to 0 (large logits)
import torch
import torch.nn.functional as F


def sgd_step(W, b, x, y, lr):
    z = x @ W + b
    p = torch.exp(z) / torch.exp(z).sum(dim=1, keepdim=True)
    cost = torch.mean(-torch.sum(y * torch.log(p), dim=1))
    gW, gb = torch.autograd.grad(cost, [W, b])
    return W - lr * gW, b - lr * gb
