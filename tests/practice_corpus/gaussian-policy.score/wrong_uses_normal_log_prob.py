# gradlab-exercise: gaussian-policy.score
# corpus: wrong
# mistake: autograd through torch.distributions.Normal(μ, σ).log_prob(a) instead of the closed form the exercise asks for (a failed check of its own); the values are right.
# relation: the values are right; the check 'does not use Normal.log_prob' fails, naming the call
import torch
import torch.nn.functional as F


def score(a, mu, sigma):
    mu = mu.detach().clone().requires_grad_()
    sigma = sigma.detach().clone().requires_grad_()
    logp = torch.distributions.Normal(mu, sigma).log_prob(a.detach())
    d_mu, d_sigma = torch.autograd.grad(logp.sum(), [mu, sigma])
    return d_mu, d_sigma
