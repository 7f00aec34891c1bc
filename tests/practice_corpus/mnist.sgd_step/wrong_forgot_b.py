# gradlab-exercise: mnist.sgd_step
# corpus: wrong
# mistake: only W is updated; b is returned unchanged.
# relation: new W right; new b = old b (its update is 0 instead of −lr·gb)
import torch
import torch.nn.functional as F


def sgd_step(W, b, x, y, lr):
    z = x @ W + b
    cost = F.cross_entropy(z, y.argmax(dim=1))
    (gW,) = torch.autograd.grad(cost, [W])
    return W - lr * gW, b
