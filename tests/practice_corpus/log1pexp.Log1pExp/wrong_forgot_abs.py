# gradlab-exercise: log1pexp.Log1pExp
# corpus: wrong
# mistake: writes the stable form as max(x, 0) + log1p(exp(−x)), forgetting the absolute value: exp(−x) overflows for very negative x.
# relation: backward = expected; forward = expected for x ≥ 0 and moderate negatives, inf for x ≲ −88 (float32)
import torch
import torch.nn.functional as F


class Log1pExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.relu(x) + torch.log1p(torch.exp(-x))

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return dy * torch.sigmoid(x)
