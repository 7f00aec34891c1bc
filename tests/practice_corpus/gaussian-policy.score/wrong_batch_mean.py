# gradlab-exercise: gaussian-policy.score
# corpus: wrong
# mistake: averages the scores over the batch, returning one number each instead of one per element.
# relation: output = mean of expected (shape () instead of a's shape); right only for a single element
import torch
import torch.nn.functional as F


def score(a, mu, sigma):
    d_mu = ((a - mu) / sigma ** 2).mean()
    d_sigma = (((a - mu) ** 2 - sigma ** 2) / sigma ** 3).mean()
    return d_mu, d_sigma
