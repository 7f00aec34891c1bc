# gradlab-exercise: log1pexp.Log1pExp
# corpus: right
# mistake: none: forward as torch.logaddexp(x, 0), backward dy·torch.special.expit(x).
# relation: equals expected (up to float rounding; expit(−100) float32 flushes like sigmoid)
import torch
import torch.nn.functional as F


class Log1pExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.logaddexp(x, torch.zeros_like(x))

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return dy * torch.special.expit(x)
