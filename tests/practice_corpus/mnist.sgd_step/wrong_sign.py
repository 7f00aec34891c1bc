# gradlab-exercise: mnist.sgd_step
# corpus: wrong
# mistake: the step goes up the gradient (W + lr·g) instead of down.
# relation: update = −1 × expected update (W and b)
import torch
import torch.nn.functional as F


def sgd_step(W, b, x, y, lr):
    z = x @ W + b
    cost = torch.mean(-torch.sum(y * F.log_softmax(z, dim=1), dim=1))
    gW, gb = torch.autograd.grad(cost, [W, b])
    return W + lr * gW, b + lr * gb
