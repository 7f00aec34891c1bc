# gradlab-exercise: gaussian-policy.score
# corpus: right
# mistake: none: autograd through torch.distributions.Normal(μ, σ).log_prob(a) instead of the closed form (the elements are independent, so grad of the sum is per-element).
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def score(a, mu, sigma):
    mu = mu.detach().clone().requires_grad_()
    sigma = sigma.detach().clone().requires_grad_()
    logp = torch.distributions.Normal(mu, sigma).log_prob(a.detach())
    d_mu, d_sigma = torch.autograd.grad(logp.sum(), [mu, sigma])
    return d_mu, d_sigma
