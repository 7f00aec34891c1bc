# gradlab-exercise: mnist.softmax_grad
# corpus: wrong
# mistake: uses sigmoid(z) (one-vs-rest logistic) in place of softmax(z).
# relation: gradient of a different loss; not a multiple of expected
import torch
import torch.nn.functional as F


def softmax_grad(W, b, x, y):
    B = x.shape[0]
    p = torch.sigmoid(x @ W + b)
    gW = x.T @ (p - y) / B
    gb = (p - y).mean(dim=0)
    return gW, gb
