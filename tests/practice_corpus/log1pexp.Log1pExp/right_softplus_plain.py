# gradlab-exercise: log1pexp.Log1pExp
# corpus: right
# mistake: none (nearly): forward F.softplus(x) (PyTorch's own, which the lesson calls finite everywhere), backward dy·torch.sigmoid(x) as the docstring says. Note: F.softplus returns x itself for x > 20, off by log1p(e^−x) ≤ 2e-9 absolute (≤ 1e-10 relative) — exact in float32, a few hundred float64 ulps; a fair grader should accept it.
# relation: equals expected in float32; float64: value within ~4e-11 relative for x > 20 (softplus threshold), exact elsewhere; gradient and second derivative exact
import torch
import torch.nn.functional as F


class Log1pExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return F.softplus(x)

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return dy * torch.sigmoid(x)
