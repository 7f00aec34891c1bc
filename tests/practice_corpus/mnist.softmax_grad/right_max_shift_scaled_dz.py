# gradlab-exercise: mnist.softmax_grad
# corpus: right
# mistake: none: stable softmax by subtracting the row max by hand; scales dz once and uses torch.mm / sum.
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def softmax_grad(W, b, x, y):
    z = torch.addmm(b, x, W)
    z = z - z.max(dim=1, keepdim=True).values
    e = z.exp()
    p = e / e.sum(dim=1, keepdim=True)
    dz = (p - y) / x.size(0)
    return torch.mm(x.t(), dz), dz.sum(0)
