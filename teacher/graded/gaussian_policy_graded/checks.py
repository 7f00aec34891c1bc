"""gaussian_policy_graded.score on gradlab's side only (never in the sandbox): the reference (autograd through
torch.distributions' tanh-squashed Normal, float64) and the known mistakes, each with what to tell its author."""

from __future__ import annotations

import math

import torch
from torch.distributions import Normal, TransformedDistribution
from torch.distributions.transforms import TanhTransform

from gradlab.kit.exercise import Cause, Checks, Mistake, Suspects

from .harness import HARNESSES

HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def reference(a, mu, log_std):
    """ln π(a) of TransformedDistribution(Normal(μ, e^log σ), TanhTransform()), and autograd's derivatives of it."""
    mu, log_std = mu.detach().clone().requires_grad_(True), log_std.detach().clone().requires_grad_(True)
    log_pi = TransformedDistribution(Normal(mu, log_std.exp()), [TanhTransform()]).log_prob(a)
    d_mu, d_log_std = torch.autograd.grad(log_pi.sum(), [mu, log_std])  # elementwise: the sum's gradient is each's
    return log_pi.detach(), d_mu, d_log_std


def _gaussian(u, mu, log_std):
    """ln N(u; μ, σ²) and its derivatives in μ and log σ."""
    z = (u - mu) / log_std.exp()
    return -0.5 * z**2 - log_std - HALF_LOG_2PI, z / log_std.exp(), z**2 - 1


def _no_jacobian(a, mu, log_std):
    return _gaussian(torch.atanh(a), mu, log_std)


def _jacobian_sign(a, mu, log_std):
    log_pi, d_mu, d_log_std = _gaussian(torch.atanh(a), mu, log_std)
    return log_pi + torch.log(1 - a**2), d_mu, d_log_std


def _no_atanh(a, mu, log_std):
    log_pi, d_mu, d_log_std = _gaussian(a, mu, log_std)  # the plain Gaussian at a: the base exercise's, adapted
    return log_pi - torch.log(1 - a**2), d_mu, d_log_std


def _d_sigma(a, mu, log_std):
    u, sigma = torch.atanh(a), log_std.exp()
    log_pi, d_mu, _ = _gaussian(u, mu, log_std)
    return log_pi - torch.log(1 - a**2), d_mu, ((u - mu) ** 2 - sigma**2) / sigma**3  # ∂/∂σ, not ∂/∂log σ


def _log_std_as_sigma(a, mu, log_std):
    u, sigma = torch.atanh(a), log_std  # log σ used as σ: the exp forgotten
    z = (u - mu) / sigma
    return -0.5 * z**2 - log_std - HALF_LOG_2PI - torch.log(1 - a**2), z / sigma, z**2 - 1


def _epsilon(a, mu, log_std):
    log_pi, d_mu, d_log_std = _gaussian(torch.atanh(a), mu, log_std)
    return log_pi - torch.log(1 - a**2 + 1e-6), d_mu, d_log_std  # ε inside the log, to keep it finite at |a| = 1


def _eps_words(student: dict, ref: dict) -> str:
    gap = float((student["log_pi"] - ref["log_pi"]).abs().max())
    return ("you added a small ε inside ln(1 − a²), a guard against |a| = 1: it changes ln π by up to "
            f"{gap:.3g} on the first input that fails, and most where 1 − a² is smallest, near the bounds. The "
            "contract is the exact density, − ln(1 − a²): the check keeps |a| ≤ 1 − 1e-6, where it is finite")


CHECKS = {"score": Checks(
    harness=HARNESSES["score"], reference=reference,
    mistakes=[
        Mistake(name="the Jacobian term forgotten", fn=_no_jacobian,
                diagnosis="your ln π is the Gaussian's at u = atanh(a) without the change of variables: a = tanh(u) "
                          "squeezes the density, so ln π(a) = ln N(u; μ, σ²) − ln(1 − a²) (da/du = 1 − tanh²u = "
                          "1 − a²; SAC's appendix C)"),
        Mistake(name="the Jacobian term's sign", fn=_jacobian_sign,
                diagnosis="you added ln(1 − a²); the density of a = tanh(u) divides by |da/du| = 1 − a², so "
                          "ln π(a) = ln N(u; μ, σ²) − ln(1 − a²)"),
        Mistake(name="atanh forgotten", fn=_no_atanh,
                diagnosis="you used the action a where the Gaussian's variable u = atanh(a) belongs: the policy "
                          "draws u ~ N(μ, σ²) and squashes it, a = tanh(u), so ln N, ∂/∂μ and ∂/∂log σ are taken "
                          "at u = atanh(a)"),
        Mistake(name="∂/∂σ, not ∂/∂log σ", fn=_d_sigma,
                diagnosis="your third output is ∂ln π/∂σ = ((u − μ)² − σ²)/σ³; the parameter is log σ: "
                          "∂ln π/∂log σ = σ · ∂ln π/∂σ = (u − μ)²/σ² − 1 (the two agree only where σ = 1)"),
        Mistake(name="ε inside the log", fn=_epsilon, diagnosis=_eps_words),
    ],
    names={"log_pi": "ln π(a) (your first output)", "d_mu": "∂ln π/∂μ (your second output)",
           "d_log_std": "∂ln π/∂log σ (your third output)"},
    quantities=lambda case: [("σ", case["log_std"].exp(), "the standard deviation"),
                             ("½ ln 2π", torch.full_like(case["a"], HALF_LOG_2PI), "the normal's constant")],
    hints={("log_pi", "plus", "expected + ½ ln 2π"): "ln N(u; μ, σ²) has the constant −½ ln 2π: keep it",
           ("d_log_std", "scale", "σ ⊙ expected"): "that is σ times ∂ln π/∂log σ: ∂ln π/∂log σ = (u − μ)²/σ² − 1",
           ("d_mu", "scale", "σ ⊙ expected"): "divide by σ², not σ: ∂ln π/∂μ = (u − μ)/σ²",
           ("*", "family", "σ:where σ = 1"): Suspects(
               lead="what differs cancels where σ = 1, as a wrong power of σ or a wrong multiple of ln σ does",
               causes=(Cause(words="the third output taken with respect to σ instead of log σ", fn=_d_sigma,
                             fix="∂ln π/∂log σ = σ · ∂ln π/∂σ = (u − μ)²/σ² − 1"),)),
           ("*", "nonfinite", "*"): Suspects(causes=(
               Cause(words="σ = log_std, the exp forgotten (σ is 0 where log σ = 0, and negative below)",
                     fix="σ = log_std.exp()", fn=_log_std_as_sigma),))})}
