# gradlab-exercise: mnist.softmax_grad
# corpus: wrong
# mistake: the softmax denominator is summed without keepdim, so (B,10)/(B,) broadcasts along the wrong axis (a shape error unless B = 10, silently wrong when B = 10).
# relation: crashes for B ≠ 10; wrong values (divides column j by row-sum j) when B = 10
import torch
import torch.nn.functional as F


def softmax_grad(W, b, x, y):
    B = x.shape[0]
    z = x @ W + b
    z = z - z.max()
    p = torch.exp(z) / torch.exp(z).sum(dim=1)
    gW = x.T @ (p - y) / B
    gb = (p - y).mean(dim=0)
    return gW, gb
