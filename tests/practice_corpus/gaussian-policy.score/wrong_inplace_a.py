# gradlab-exercise: gaussian-policy.score
# corpus: wrong
# mistake: reuses a as a scratch buffer (a -= mu), so the caller's actions are overwritten.
# relation: returned values = expected; input a mutated to a − μ
import torch
import torch.nn.functional as F


def score(a, mu, sigma):
    a -= mu
    s2 = sigma * sigma
    return a / s2, (a * a - s2) / (s2 * sigma)
