# gradlab-exercise: mnist.sgd_step
# corpus: right
# mistake: none: passes the one-hot y straight to F.cross_entropy (probability targets, PyTorch ≥ 1.10).
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def sgd_step(W, b, x, y, lr):
    loss = F.cross_entropy(torch.addmm(b, x, W), y)
    gW, gb = torch.autograd.grad(loss, [W, b])
    return W.detach() - lr * gW, b.detach() - lr * gb
