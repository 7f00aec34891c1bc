"""The model answer to log1pexp_graded.Log1mExp: the suite checks it with gradlab check; the teacher hands it out
after the exam (it is in no student's gradlab)."""

import math

import torch


class Log1mExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        # Mächler 2012: log(−expm1(−x)) is accurate for x ≤ log 2, log1p(−exp(−x)) above it
        return torch.where(x <= math.log(2), torch.log(-torch.expm1(-x)), torch.log1p(-torch.exp(-x)))

    @staticmethod
    def backward(ctx, dy):
        x, = ctx.saved_tensors
        return dy * torch.exp(-x) / -torch.expm1(-x)  # f'(x) = e^−x / (1 − e^−x), with no e^x to overflow
