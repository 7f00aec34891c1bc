# gradlab-exercise: log1pexp.Log1pExp
# corpus: wrong
# mistake: the TF-1 tutorial's version: saves e = exp(x) in forward and returns dy·(1 − 1/(1+e)); e is a constant to autograd, so the second derivative is 0, and the forward overflows.
# relation: first derivative = expected (for moderate x); second derivative = 0 instead of sigmoid'(x); forward inf at x = 100 float32
import torch
import torch.nn.functional as F


class Log1pExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        e = torch.exp(x)
        ctx.save_for_backward(e)
        return torch.log(1 + e)

    @staticmethod
    def backward(ctx, dy):
        (e,) = ctx.saved_tensors
        return dy * (1 - 1 / (1 + e))
