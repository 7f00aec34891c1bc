# gradlab-exercise: mnist.softmax_grad
# corpus: wrong
# mistake: divides by B twice: once in dz = (p − y)/B and again in ∂W and ∂b.
# relation: output = (1/B) × expected, for ∂W and ∂b
import torch
import torch.nn.functional as F


def softmax_grad(W, b, x, y):
    B = x.shape[0]
    p = torch.softmax(x @ W + b, dim=1)
    dz = (p - y) / B
    gW = x.T @ dz / B
    gb = dz.mean(dim=0)
    return gW, gb
