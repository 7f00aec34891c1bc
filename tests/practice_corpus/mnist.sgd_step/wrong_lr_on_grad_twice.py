# gradlab-exercise: mnist.sgd_step
# corpus: wrong
# mistake: the learning rate is folded into the cost and then applied again in the update, so the step is lr² instead of lr times the gradient.
# relation: update = lr × expected update (right only when lr = 1)
import torch
import torch.nn.functional as F


def sgd_step(W, b, x, y, lr):
    z = x @ W + b
    cost = lr * F.cross_entropy(z, y.argmax(dim=1))
    gW, gb = torch.autograd.grad(cost, [W, b])
    return W - lr * gW, b - lr * gb
