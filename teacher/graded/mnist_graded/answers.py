"""The model answer to mnist_graded.weighted_softmax_grad: the suite checks it with gradlab check; the teacher hands
it out after the exam (it is in no student's gradlab)."""

import torch


def weighted_softmax_grad(W, b, x, y, w):
    n = (w != 0).sum().clamp(min=1)  # N, the non-zero weights; 0/0 becomes 0/1 when every weight is 0
    d = w[:, None] * (torch.softmax(x @ W + b, dim=1) - y) / n  # ∂cost/∂z_i = w_i (p_i − y_i) / N
    return x.T @ d, d.sum(dim=0)
