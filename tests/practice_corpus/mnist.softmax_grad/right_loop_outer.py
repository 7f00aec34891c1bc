# gradlab-exercise: mnist.softmax_grad
# corpus: right
# mistake: none: accumulates the per-sample outer products x_iᵀ(p_i − y_i) in an explicit Python loop, in float64, then casts back.
# relation: equals expected (up to float rounding; accumulation in float64 may be slightly more accurate than the reference)
import torch
import torch.nn.functional as F


def softmax_grad(W, b, x, y):
    p = F.softmax(x @ W + b, dim=-1)
    B = len(x)
    gW = torch.zeros(W.shape, dtype=torch.float64)
    gb = torch.zeros(b.shape, dtype=torch.float64)
    for i in range(B):
        d = (p[i] - y[i]).double()
        gW += torch.outer(x[i].double(), d)
        gb += d
    return (gW / B).to(W.dtype), (gb / B).to(b.dtype)
