# gradlab-exercise: mnist.softmax_grad
# corpus: wrong
# mistake: ∂b sums p − y over the batch instead of averaging it.
# relation: ∂b = B × expected; ∂W right
import torch
import torch.nn.functional as F


def softmax_grad(W, b, x, y):
    B = x.shape[0]
    p = torch.softmax(x @ W + b, dim=1)
    gW = x.T @ (p - y) / B
    gb = torch.sum(p - y, dim=0)
    return gW, gb
