# gradlab-exercise: mnist.sgd_step
# corpus: wrong
# mistake: F.cross_entropy already applies log_softmax, and the logits were passed through softmax first: softmax applied twice.
# relation: gradient of a different function (cross-entropy of softmax(softmax(z))); much smaller than expected, not a scalar multiple
import torch
import torch.nn.functional as F


def sgd_step(W, b, x, y, lr):
    p = F.softmax(x @ W + b, dim=1)
    cost = F.cross_entropy(p, y.argmax(dim=1))
    gW, gb = torch.autograd.grad(cost, [W, b])
    return W - lr * gW, b - lr * gb
