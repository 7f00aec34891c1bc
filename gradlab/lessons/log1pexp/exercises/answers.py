"""Model answers to the exercises of `gradlab log1pexp`, as a student would write them: what the notebooks' "Your turn"
cells become when the suite runs them (scripts/notebooks.py --answers), what a teacher can hand out afterwards. The
suite checks each one with `gradlab check`, as it checks a student's file; never imported beside a submission."""

import torch


class Log1pExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, dy):
        x, = ctx.saved_tensors
        return dy * torch.sigmoid(x)


def softplus(x):
    return torch.logaddexp(x, torch.zeros_like(x))  # log(e^x + e^0), computed without overflow; its gradient σ(x)
