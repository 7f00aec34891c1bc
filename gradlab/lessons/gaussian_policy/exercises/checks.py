"""The exercises of `gradlab gaussian-policy`, on gradlab's side: each one's reference answer, its known mistakes (a
realistic wrong implementation and what to tell its author) and what the diagnosis measures. Never imported beside a
submission."""

from __future__ import annotations

import math

import torch

from gradlab.kit.exercise import Checks, Mistake, autograd_outputs
from gradlab.lessons.gaussian_policy.exercises.harness import HARNESSES, NAMES

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


def _sigma_quantities(case: dict) -> list:
    return [("σ", case["sigma"], "the standard deviation"), ("2σ", 2 * case["sigma"], "twice the standard deviation")]


SCORE = Checks(
    harness=HARNESSES["score"], reference=_score_reference,
    mistakes=[
        Mistake(name="−1/σ missing", fn=_score_no_log_sigma,
                diagnosis="∂ln π/∂σ misses −1/σ: ln π has the term −ln σ (from the normalisation), so ∂ln "
                          "π/∂σ = ((a − μ)² − σ²)/σ³"),
        Mistake(name="∂/∂σ²", fn=_score_variance,
                diagnosis="your second output is the derivative with respect to the variance σ², not to σ: multiply by "
                          "∂σ²/∂σ = 2σ"),
        Mistake(name="sign", fn=_score_sign,
                diagnosis="∂ln π/∂μ has the wrong sign: it is (a − μ)/σ², pointing from μ towards the action"),
    ],
    names={"d_mu": "∂ln π/∂μ (your first output)", "d_sigma": "∂ln π/∂σ (your second output)"},
    quantities=_sigma_quantities,
    hints={("d_sigma", "scale", "σ ⊙ expected"): "that is σ·∂ln π/∂σ: the derivative with respect to log σ (the "
                                                 "log-std parameterisation), or σ² where σ³ belongs (the same "
                                                 "numbers: the values cannot tell which): ∂ln π/∂σ = "
                                                 "((a − μ)² − σ²)/σ³",
           ("d_mu", "scale", "σ ⊙ expected"): "divide by σ², not σ: ∂ln π/∂μ = (a − μ)/σ²",
           ("*", "swapped", "*"): "return (d_mu, d_sigma) in that order",
           ("*", "family", "σ:where σ = 1"): "a power of σ is off: it cancels where σ = 1"})


# ------------------------------------------------------------------------------------------------ GaussianLogProb

HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class _Layer(torch.autograd.Function):
    """ln N(a; μ, σ) elementwise, its backward written with torch operations on the saved inputs."""

    @staticmethod
    def forward(ctx, a, mu, sigma):
        ctx.save_for_backward(a, mu, sigma)
        return -((a - mu) ** 2) / (2 * sigma**2) - torch.log(sigma) - HALF_LOG_2PI

    @staticmethod
    def backward(ctx, dy):
        a, mu, sigma = ctx.saved_tensors
        d_mu = (a - mu) / sigma**2  # ∂/∂μ; ∂/∂a is its negative
        return -dy * d_mu, dy * d_mu, dy * ((a - mu) ** 2 - sigma**2) / sigma**3


def _layer_expected(case: dict) -> dict:
    """The library's way: autograd through torch.distributions.Normal(μ, σ).log_prob(a), twice."""
    return autograd_outputs(lambda a, mu, sigma: torch.distributions.Normal(mu, sigma).log_prob(a),
                            [case[k] for k in NAMES], case["dy"], case["v"], NAMES)


class _LayerASign(_Layer):
    @staticmethod
    def backward(ctx, dy):
        a, mu, sigma = ctx.saved_tensors
        d_mu = (a - mu) / sigma**2
        return dy * d_mu, dy * d_mu, dy * ((a - mu) ** 2 - sigma**2) / sigma**3


class _LayerNoLogSigma(_Layer):
    @staticmethod
    def backward(ctx, dy):
        a, mu, sigma = ctx.saved_tensors
        d_mu = (a - mu) / sigma**2
        return -dy * d_mu, dy * d_mu, dy * (a - mu) ** 2 / sigma**3


class _LayerNoA(_Layer):
    @staticmethod
    def backward(ctx, dy):
        a, mu, sigma = ctx.saved_tensors
        d_mu = (a - mu) / sigma**2
        return None, dy * d_mu, dy * ((a - mu) ** 2 - sigma**2) / sigma**3


class _LayerSaved(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, mu, sigma):
        z = (a - mu) / sigma
        ctx.save_for_backward(z / sigma, (z**2 - 1) / sigma)  # the scores, made in forward: constants to autograd
        return -z**2 / 2 - torch.log(sigma) - HALF_LOG_2PI

    @staticmethod
    def backward(ctx, dy):
        d_mu, d_sigma = ctx.saved_tensors
        return -dy * d_mu, dy * d_mu, dy * d_sigma


LAYER = Checks(
    harness=HARNESSES["GaussianLogProb"], reference=_Layer, expected=_layer_expected,
    mistakes=[
        Mistake(name="∂/∂a = ∂/∂μ", fn=_LayerASign,
                diagnosis="your gradient for a is ∂ln π/∂μ: a and μ enter as (a − μ), so ∂ln π/∂a = −(a − μ)/σ² = −∂ln "
                          "π/∂μ"),
        Mistake(name="−1/σ missing", fn=_LayerNoLogSigma,
                diagnosis="∂ln π/∂σ misses −1/σ: ln π has the term −ln σ (from the normalisation), so ∂ln "
                          "π/∂σ = ((a − μ)² − σ²)/σ³"),
        Mistake(name="None for a", fn=_LayerNoA,
                diagnosis="you returned None as a's gradient: ln π depends on the action too (∂ln π/∂a = −(a − μ)/σ²); "
                          "None says it does not (autograd.grad then raises for a unless allow_unused=True, "
                          ".backward() leaves a.grad None), and the check counts it as 0"),
        Mistake(name="scores saved in forward", fn=_LayerSaved,
                diagnosis="the value and the gradients are right, but the second derivatives are not: the scores "
                          "computed in forward and saved are constants to autograd. Save a, μ and σ, and compute the "
                          "gradients from them in backward"),
    ],
    names={"value": "the value ln π", "grad a": "the gradient for a", "grad mu": "the gradient for μ",
           "grad sigma": "the gradient for σ", "second a": "the second derivative (a's row)",
           "second mu": "the second derivative (μ's row)", "second sigma": "the second derivative (σ's row)"},
    quantities=lambda case: [("dy", case["dy"], "the upstream gradient"), *_sigma_quantities(case),
                             ("½ ln 2π", torch.full_like(case["a"], HALF_LOG_2PI), "the normal's constant")],
    hints={("*", "family", "upstream:when dy = 1"): "summing the output sends dy = 1, which hides a backward that "
                                                    "ignores dy",
           ("*", "scale", "expected / dy"): "backward(ctx, dy) must return each gradient times dy (the chain rule)",
           ("value", "plus", "expected + ½ ln 2π"): "ln N(a; μ, σ²) has the constant −½ ln 2π: keep it",
           ("grad sigma", "scale", "expected / 2σ"): "that is the derivative with respect to the variance σ²: "
                                                     "multiply by ∂σ²/∂σ = 2σ",
           ("*", "zero", "*"): "a zero second derivative: your backward is a constant to autograd (values saved in "
                               "forward, .detach(), torch.no_grad()); compute it from the saved inputs"})


CHECKS: dict[str, Checks] = {
    "score": SCORE,
    "GaussianLogProb": LAYER,
}
