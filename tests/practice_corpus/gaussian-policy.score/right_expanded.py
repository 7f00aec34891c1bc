# gradlab-exercise: gaussian-policy.score
# corpus: right
# mistake: none: the σ-derivative expanded term by term, (a − μ)²/σ³ − 1/σ, with torch.pow and reciprocal.
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def score(a, mu, sigma):
    inv = torch.reciprocal(sigma)
    d = a - mu
    return d * inv.pow(2), d.pow(2) * inv.pow(3) - inv
