# gradlab-exercise: mnist.sgd_step
# corpus: wrong
# mistake: torch.mean(-y * log p) averages over the 10 classes as well as the batch (the inner sum over classes is missing), so the gradient is 10 times too small.
# relation: update = (1/10) × expected update (1/K, K = 10 classes)
import torch
import torch.nn.functional as F


def sgd_step(W, b, x, y, lr):
    p = torch.softmax(x @ W + b, dim=1)
    cost = torch.mean(-y * torch.log(p))
    gW, gb = torch.autograd.grad(cost, [W, b])
    return W - lr * gW, b - lr * gb
