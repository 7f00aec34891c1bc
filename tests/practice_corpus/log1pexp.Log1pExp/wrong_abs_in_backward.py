# gradlab-exercise: log1pexp.Log1pExp
# corpus: wrong
# mistake: stable sigmoid in the backward built from z = exp(−|x|): autograd takes d|x|/dx = 0 at x = 0, so the second derivative at 0 comes out 0 instead of 1/4.
# relation: forward and first derivative = expected everywhere; second derivative = expected except at x = 0 (0 instead of 0.25)
import torch
import torch.nn.functional as F


class Log1pExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        z = torch.exp(-x.abs())
        s = torch.where(x >= 0, 1 / (1 + z), z / (1 + z))
        return dy * s
