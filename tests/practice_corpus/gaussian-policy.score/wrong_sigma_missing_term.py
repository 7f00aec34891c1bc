# gradlab-exercise: gaussian-policy.score
# corpus: wrong
# mistake: forgets the −1/σ that comes from the normalising constant −ln σ: d_sigma = (a − μ)²/σ³.
# relation: d_sigma = expected + 1/σ; d_mu right
import torch
import torch.nn.functional as F


def score(a, mu, sigma):
    diff = a - mu
    d_mu = diff / sigma ** 2
    d_sigma = diff ** 2 / sigma ** 3
    return d_mu, d_sigma
