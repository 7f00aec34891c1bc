# gradlab-exercise: mnist.softmax_grad
# corpus: wrong
# mistake: computes (p − y)ᵀ x, the transpose of ∂W: shape (10, 784) instead of (784, 10).
# relation: ∂W = transpose of expected; ∂b right
import torch
import torch.nn.functional as F


def softmax_grad(W, b, x, y):
    B = x.shape[0]
    p = torch.softmax(x @ W + b, dim=1)
    gW = (p - y).T @ x / B
    gb = (p - y).mean(dim=0)
    return gW, gb
