# gradlab-exercise: gaussian-policy.score
# corpus: wrong
# mistake: computes ∂ln π/∂σ first and returns the two in the order it computed them, (d_sigma, d_mu).
# relation: the two outputs swapped (where a = μ the first expected is 0, so the second looks like −1/σ missing)
import torch


def score(a, mu, sigma):
    d_sigma = ((a - mu) ** 2 - sigma ** 2) / sigma ** 3
    d_mu = (a - mu) / sigma ** 2
    return d_sigma, d_mu
