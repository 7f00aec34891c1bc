# gradlab-exercise: log1pexp.Log1pExp
# corpus: wrong
# mistake: the backward returns sigmoid(x) without multiplying by the incoming gradient dy.
# relation: equals expected when dy = 1 only (e.g. y.sum().backward()); otherwise off by the factor dy
import torch
import torch.nn.functional as F


class Log1pExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-torch.abs(x)))

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return torch.sigmoid(x)
