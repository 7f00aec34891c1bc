# gradlab-exercise: gaussian-policy.score
# corpus: wrong
# mistake: divides by σ² instead of σ³ in ∂ln π/∂σ.
# relation: d_sigma = σ × expected (right only where σ = 1); d_mu right
import torch
import torch.nn.functional as F


def score(a, mu, sigma):
    d_mu = (a - mu) / sigma**2
    d_sigma = ((a - mu)**2 - sigma**2) / sigma**2
    return d_mu, d_sigma
