# gradlab-exercise: mnist.sgd_step
# corpus: wrong
# mistake: log_softmax normalises over the batch (dim=0) instead of over the classes.
# relation: gradient of a different function (softmax across samples); not a multiple of expected
import torch
import torch.nn.functional as F


def sgd_step(W, b, x, y, lr):
    z = x @ W + b
    logp = F.log_softmax(z, dim=0)
    cost = -(y * logp).sum(dim=1).mean()
    gW, gb = torch.autograd.grad(cost, [W, b])
    return W - lr * gW, b - lr * gb
