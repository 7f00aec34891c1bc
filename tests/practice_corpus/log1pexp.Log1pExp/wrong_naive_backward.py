# gradlab-exercise: log1pexp.Log1pExp
# corpus: wrong
# mistake: stable forward, but the backward writes sigmoid as exp(x)/(1 + exp(x)), which is inf/inf = NaN at x = 100.
# relation: forward = expected; first derivative NaN for x ≳ 88 (float32), expected elsewhere
import torch
import torch.nn.functional as F


class Log1pExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.maximum(x, torch.zeros_like(x)) + torch.log1p(torch.exp(-torch.abs(x)))

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        e = torch.exp(x)
        return dy * e / (1 + e)
