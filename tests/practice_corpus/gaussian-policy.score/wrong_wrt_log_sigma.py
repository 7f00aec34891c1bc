# gradlab-exercise: gaussian-policy.score
# corpus: wrong
# mistake: returns the derivative with respect to log σ ((a − μ)²/σ² − 1), the usual log-std parameterisation, instead of with respect to σ.
# relation: d_sigma = σ × expected; d_mu right
import torch
import torch.nn.functional as F


def score(a, mu, sigma):
    z = (a - mu) / sigma
    d_mu = z / sigma
    d_sigma = z ** 2 - 1
    return d_mu, d_sigma
