# gradlab-exercise: gaussian-policy.score
# corpus: wrong
# mistake: differentiates with respect to the variance σ² instead of σ: ((a − μ)² − σ²)/(2σ⁴).
# relation: d_sigma = expected / (2σ); d_mu right
import torch
import torch.nn.functional as F


def score(a, mu, sigma):
    var = sigma ** 2
    d_mu = (a - mu) / var
    d_sigma = ((a - mu) ** 2 - var) / (2 * var ** 2)
    return d_mu, d_sigma
