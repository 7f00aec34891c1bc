"""The exercises of `gradlab gaussian-policy`, on gradlab's side: each one's reference answer, its known mistakes (a
realistic wrong implementation and what to tell its author) and what its checks claim. Never imported beside a
submission."""

from __future__ import annotations

import torch

from gradlab.lessons.gaussian_policy.exercises.harness import HARNESSES
from gradlab.practice.exercise import Checks, Mistake

# --------------------------------------------------------------------------------------------------------- score

def _score_reference(a, mu, sigma):
    """autograd through torch.distributions.Normal(μ, σ).log_prob(a): the lesson's claim is the closed form equals
    it."""
    mu, sigma = mu.detach().clone().requires_grad_(True), sigma.detach().clone().requires_grad_(True)
    return torch.autograd.grad(torch.distributions.Normal(mu, sigma).log_prob(a).sum(), [mu, sigma])


def _score_no_log_sigma(a, mu, sigma):
    return (a - mu) / sigma**2, (a - mu) ** 2 / sigma**3


def _score_variance(a, mu, sigma):
    return (a - mu) / sigma**2, ((a - mu) ** 2 - sigma**2) / (2 * sigma**4)


def _score_sign(a, mu, sigma):
    return (mu - a) / sigma**2, ((a - mu) ** 2 - sigma**2) / sigma**3


SCORE = Checks(
    harness=HARNESSES["score"], reference=_score_reference,
    mistakes=[
        Mistake("−1/σ missing", _score_no_log_sigma, lambda s, r: "∂ln π/∂σ misses −1/σ: ln π has the term −ln σ "
                "(from the normalisation), so ∂ln π/∂σ = ((a − μ)² − σ²)/σ³"),
        Mistake("∂/∂σ²", _score_variance, lambda s, r: "your second output is the derivative with respect to the "
                "variance σ², not to σ: multiply by ∂σ²/∂σ = 2σ"),
        Mistake("sign", _score_sign, lambda s, r: "∂ln π/∂μ has the wrong sign: it is (a − μ)/σ², pointing from μ "
                "towards the action"),
    ],
    claims={"score": ("your closed forms ≡ autograd through Normal(μ, σ).log_prob(a) (max relative |Δ|)", 1e-9)})


CHECKS: dict[str, Checks] = {
    "score": SCORE,
}
