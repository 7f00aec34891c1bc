# gradlab-exercise: log1pexp.Log1pExp
# corpus: wrong
# mistake: computes sigmoid(x) in the forward and saves it; in the backward it is a constant, so the second derivative comes out 0.
# relation: forward and first derivative = expected; second derivative = 0 instead of sigmoid(x)(1 − sigmoid(x)) (gradgradcheck fails)
import torch
import torch.nn.functional as F


class Log1pExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(s)
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, dy):
        (s,) = ctx.saved_tensors
        return dy * s
