# gradlab-exercise: gaussian-policy.score
# corpus: wrong
# mistake: divides by σ instead of σ² in ∂ln π/∂μ.
# relation: d_mu = σ × expected (right only where σ = 1); d_sigma right
import torch
import torch.nn.functional as F


def score(a, mu, sigma):
    d_mu = (a - mu) / sigma
    d_sigma = ((a - mu) ** 2 - sigma ** 2) / sigma ** 3
    return d_mu, d_sigma
