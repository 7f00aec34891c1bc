"""gradlab exercise gaussian-policy.score (level 1): the score of a Gaussian policy, ∂ln π/∂μ and ∂ln π/∂σ, in
closed form.

Write it yourself: this exercise is to write what torch.distributions.Normal.log_prob does for you, so calling
it fails a check of its own.

Write the body of score below, then check it:

    gradlab check score.py
"""

# gradlab-exercise: gaussian-policy.score
import torch
import torch.nn.functional as F


def score(a, mu, sigma):
    """The gradient of ln N(a; μ, σ²) with respect to μ and σ, from the formulas:

    ∂ln π/∂μ = (a − μ)/σ²,   ∂ln π/∂σ = ((a − μ)² − σ²)/σ³

    Shapes: a, mu, sigma of the same shape (one number per action dimension, or a batch); sigma > 0; they are
    not changed. Return (d_mu, d_sigma), one number per element. TF-1: the tutorial's layer was meant to give
    these as the gradient of ln π.
    """
    diff = a - mu
    d_mu = diff / sigma ** 2
    d_sigma = diff ** 2 / sigma ** 3
    return d_mu, d_sigma
