# gradlab-exercise: mnist.softmax_grad
# corpus: wrong
# mistake: ∂W forgets to divide by the batch size B (∂b uses mean, so it is right).
# relation: ∂W = B × expected; ∂b right
import torch
import torch.nn.functional as F


def softmax_grad(W, b, x, y):
    p = torch.softmax(x @ W + b, dim=1)
    gW = x.T @ (p - y)
    gb = (p - y).mean(dim=0)
    return gW, gb
