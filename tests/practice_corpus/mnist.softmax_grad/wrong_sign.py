# gradlab-exercise: mnist.softmax_grad
# corpus: wrong
# mistake: uses y − p instead of p − y: the gradient of −cost.
# relation: output = −1 × expected, for ∂W and ∂b
import torch
import torch.nn.functional as F


def softmax_grad(W, b, x, y):
    B = x.shape[0]
    p = torch.softmax(x @ W + b, dim=1)
    err = y - p
    return x.T @ err / B, err.mean(0)
