# gradlab-exercise: gaussian-policy.score
# corpus: wrong
# mistake: returns the two derivatives in the wrong order, (d_sigma, d_mu).
# relation: output[0] = expected d_sigma, output[1] = expected d_mu (swapped)
import torch
import torch.nn.functional as F


def score(a, mu, sigma):
    d_mu = (a - mu) / sigma ** 2
    d_sigma = ((a - mu) ** 2 - sigma ** 2) / sigma ** 3
    return d_sigma, d_mu
