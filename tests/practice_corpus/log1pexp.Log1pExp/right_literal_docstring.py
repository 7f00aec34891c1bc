# gradlab-exercise: log1pexp.Log1pExp
# corpus: right
# mistake: none: exactly the docstring's formulas — max(x,0) + log1p(exp(−|x|)) and dy·torch.sigmoid(x). Note: torch.sigmoid(−100) in float32 is 0 where the exact value is 3.7e-44 (README mentions this); a fair grader should not fail it for that.
# relation: equals expected, except possibly first derivative at x ≲ −88 float32 (0 instead of a denormal ~1e-44)
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
        return dy * torch.sigmoid(x)
