# gradlab-exercise: log1pexp.Log1pExp
# corpus: wrong
# mistake: computes the backward on x.detach() 'to be safe', cutting it from the graph: the second derivative is 0.
# relation: forward and first derivative = expected; second derivative = 0
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
        return dy * torch.sigmoid(x.detach())
