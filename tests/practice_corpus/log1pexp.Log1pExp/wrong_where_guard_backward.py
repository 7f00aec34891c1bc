# gradlab-exercise: log1pexp.Log1pExp
# corpus: wrong
# mistake: guards the backward with torch.where between two sigmoid formulas; the first derivative is finite, but differentiating through where reaches the overflowing branch, so the second derivative is NaN at large |x|.
# relation: forward and first derivative = expected; second derivative NaN for |x| ≳ 88 (float32), expected elsewhere
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
        s = torch.where(x > 0, 1 / (1 + torch.exp(-x)), torch.exp(x) / (1 + torch.exp(x)))
        return dy * s
