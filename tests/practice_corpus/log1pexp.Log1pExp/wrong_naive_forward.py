# gradlab-exercise: log1pexp.Log1pExp
# corpus: wrong
# mistake: the forward is the textbook log(1 + exp(x)), which overflows to inf at x = 100 in float32 (the backward is right).
# relation: backward = expected; forward = inf for x ≳ 88 in float32 (and ≳ 709 in float64), right elsewhere
import torch
import torch.nn.functional as F


class Log1pExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log(1 + torch.exp(x))

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return dy * torch.sigmoid(x)
