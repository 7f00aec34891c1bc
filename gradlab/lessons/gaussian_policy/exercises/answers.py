"""Model answers to the exercises of `gradlab gaussian-policy`, as a student would write them: what the notebooks' "Your
turn" cells become when the suite runs them (scripts/notebooks.py --answers), what a teacher can hand out afterwards.
The suite checks each one with `gradlab check`, as it checks a student's file; never imported beside a submission."""

import math

import torch


def score(a, mu, sigma):
    return (a - mu) / sigma**2, ((a - mu) ** 2 - sigma**2) / sigma**3


class GaussianLogProb(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, mu, sigma):
        ctx.save_for_backward(a, mu, sigma)
        return -((a - mu) ** 2) / (2 * sigma**2) - torch.log(sigma) - 0.5 * math.log(2 * math.pi)

    @staticmethod
    def backward(ctx, dy):
        a, mu, sigma = ctx.saved_tensors
        d_mu = (a - mu) / sigma**2  # ∂ln π/∂μ; ∂ln π/∂a is its negative
        return -dy * d_mu, dy * d_mu, dy * ((a - mu) ** 2 - sigma**2) / sigma**3
