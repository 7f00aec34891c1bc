# gradlab-exercise: mnist.softmax_grad
# corpus: right
# mistake: none: probabilities from exp(z − logsumexp(z)), ∂W by einsum, ∂b as a sum divided by B.
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def softmax_grad(W, b, x, y):
    z = x @ W + b
    p = torch.exp(z - torch.logsumexp(z, dim=1, keepdim=True))
    d = p - y
    n = x.shape[0]
    gW = torch.einsum("bi,bk->ik", x, d) / n
    gb = d.sum(dim=0) / n
    return gW, gb
