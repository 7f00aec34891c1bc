"""Model answers to the exercises of `gradlab mnist`, as a student would write them: what the notebooks' "Your turn"
cells become when the suite runs them (scripts/notebooks.py --answers), what a teacher can hand out afterwards. The
suite checks each one with `gradlab check`, as it checks a student's file; never imported beside a submission."""

import torch
import torch.nn.functional as F


def sgd_step(W, b, x, y, lr):
    cost = -(y * F.log_softmax(x @ W + b, dim=1)).sum(dim=1).mean()
    gW, gb = torch.autograd.grad(cost, [W, b])
    return W - lr * gW, b - lr * gb


def softmax_grad(W, b, x, y):
    d = (torch.softmax(x @ W + b, dim=1) - y) / len(x)  # ∂cost/∂z = (p − y)/B
    return x.T @ d, d.sum(dim=0)


class LogSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        m = z.max(dim=-1, keepdim=True).values
        return (z - m) - torch.log(torch.exp(z - m).sum(dim=-1, keepdim=True))  # z − logsumexp(z), shifted by m

    @staticmethod
    def backward(ctx, dy):
        z, = ctx.saved_tensors
        return dy - torch.softmax(z, dim=-1) * dy.sum(dim=-1, keepdim=True)  # dy − softmax(z)·Σ_j dy_j
