# gradlab-exercise: mnist.sgd_step
# corpus: wrong
# mistake: the cost is the sum of the per-sample cross-entropies instead of their mean, so the step is B times too big.
# relation: update = B × expected update, for both W and b
import torch
import torch.nn.functional as F


def sgd_step(W, b, x, y, lr):
    z = x @ W + b
    cost = -(y * F.log_softmax(z, dim=1)).sum()
    gW, gb = torch.autograd.grad(cost, [W, b])
    return W - lr * gW, b - lr * gb
