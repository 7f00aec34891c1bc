# gradlab-exercise: log1pexp.Log1pExp
# corpus: right
# mistake: none (nearly): forward with F.softplus, backward dy·exp(−softplus(−x)) (= sigmoid, differentiable and no flush at −100). Note: F.softplus returns x itself for x > 20, which is off by log1p(e^−x) ≈ 2e-9 — below float32 resolution but several float64 ulps; a fair grader's tolerance should accept it.
# relation: equals expected within ~1e-10 relative in float64 for x > 20 (softplus threshold), exact elsewhere
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
        return dy * torch.exp(-F.softplus(-x))
