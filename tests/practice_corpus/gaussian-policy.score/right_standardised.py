# gradlab-exercise: gaussian-policy.score
# corpus: right
# mistake: none: goes through the standardised action z = (a − μ)/σ: d_mu = z/σ, d_sigma = (z² − 1)/σ.
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def score(a, mu, sigma):
    z = (a - mu) / sigma
    return z / sigma, (z * z - 1) / sigma
