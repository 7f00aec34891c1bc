# gradlab-exercise: gaussian-policy.score
# corpus: wrong
# mistake: ∂ln π/∂μ written as (μ − a)/σ² — the sign flipped (the derivative of the squared error, not of the log-density).
# relation: d_mu = −1 × expected; d_sigma right
import torch
import torch.nn.functional as F


def score(a, mu, sigma):
    d_mu = (mu - a) / sigma ** 2
    d_sigma = ((a - mu) ** 2 - sigma ** 2) / sigma ** 3
    return d_mu, d_sigma
