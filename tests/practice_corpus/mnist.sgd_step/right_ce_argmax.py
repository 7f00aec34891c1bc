# gradlab-exercise: mnist.sgd_step
# corpus: right
# mistake: none: uses F.cross_entropy with class numbers from y.argmax(1), and returns detached tensors computed under no_grad.
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def sgd_step(W, b, x, y, lr):
    labels = y.argmax(dim=1)
    loss = F.cross_entropy(x @ W + b, labels)
    gW, gb = torch.autograd.grad(loss, (W, b))
    with torch.no_grad():
        return W - lr * gW, b - lr * gb
