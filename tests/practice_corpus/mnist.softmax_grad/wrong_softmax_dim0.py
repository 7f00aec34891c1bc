# gradlab-exercise: mnist.softmax_grad
# corpus: wrong
# mistake: softmax normalises down the batch (dim=0) instead of across the 10 classes.
# relation: ∂W, ∂b of a different function; not a multiple of expected (right only in no case of interest)
import torch
import torch.nn.functional as F


def softmax_grad(W, b, x, y):
    B = x.shape[0]
    z = x @ W + b
    p = torch.softmax(z, dim=0)
    gW = x.t() @ (p - y) / B
    gb = (p - y).mean(dim=0)
    return gW, gb
