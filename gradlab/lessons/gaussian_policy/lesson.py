"""A custom-gradient layer for a Gaussian policy's score function, trained with REINFORCE.

A Gaussian policy π(a|s) = N(μ, σ²) per action dimension has

    ln π(a) = −(a − μ)²/(2σ²) − ln σ − ½ ln 2π

and its score function (the gradient REINFORCE multiplies by the return) in closed form:

    ∂ ln π/∂μ = (a − μ)/σ²
    ∂ ln π/∂σ = ((a − μ)² − σ²)/σ³

The tutorial wrote a TF-1 layer whose forward is ln π and whose backward *injects* these closed forms into
backpropagation, instead of letting TF differentiate the formula. Its code has three bugs, fixed here:
  * the gradient function reads `y` (a global) where it means its argument `_y` (the upstream gradient);
  * it builds `Normal(loc=0, scale=0)`: a distribution with zero spread, whose log-density is undefined;
  * it samples with the batch size of the wrong tensor (μ's batch, not the action batch it is paired with).
Here the same idea is a `torch.autograd.Function` whose backward is the closed form above (and ∂ ln π/∂a =
−(a − μ)/σ² for completeness). It is checked against `torch.distributions.Normal(μ, σ).log_prob(a)` and
`gradcheck`, then used to train a policy with REINFORCE on a one-step continuous bandit with a known optimum:

    reward r(a) = −‖a − a*‖²          the best policy is μ = a*, σ → 0
    loss = −mean_k (r_k − b) ln π(a_k)   b = the batch's mean reward (a baseline, to cut variance)

so μ walks to a* and σ shrinks, epoch by epoch. σ = exp(ρ) keeps σ > 0 while the layer's σ-gradient flows
through the chain rule into ρ.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from gradlab.lessons.gaussian_policy.settings import (  # the settings, declared once (no torch: --help reads them)
    Config,
    parse_list,
)
from gradlab.result import Claim, Curve, Result, Table

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)



# The code `--explain` shows beside the math, read from this file at run time.
EXPLAIN = ("GaussianLogProb", "score_closed_form", "reinforce")




class GaussianLogProb(torch.autograd.Function):
    """ln N(a; μ, σ²) forward; the closed-form score function backward (the tutorial's custom-gradient layer)."""

    @staticmethod
    def forward(ctx, mu, sigma, a):
        ctx.save_for_backward(mu, sigma, a)
        return -((a - mu) ** 2) / (2 * sigma**2) - torch.log(sigma) - LOG_SQRT_2PI

    @staticmethod
    def backward(ctx, dy):
        mu, sigma, a = ctx.saved_tensors
        d = a - mu
        grad_mu = dy * d / sigma**2  # ∂ ln π/∂μ = (a − μ)/σ²
        grad_sigma = dy * (d**2 - sigma**2) / sigma**3  # ∂ ln π/∂σ = ((a − μ)² − σ²)/σ³
        grad_a = -grad_mu  # ∂ ln π/∂a = −(a − μ)/σ²
        return grad_mu, grad_sigma, grad_a


def score_closed_form(mu, sigma, a):
    return (a - mu) / sigma**2, ((a - mu) ** 2 - sigma**2) / sigma**3


def score_autograd(mu, sigma, a, log_prob: Callable):
    mu, sigma = mu.clone().requires_grad_(True), sigma.clone().requires_grad_(True)
    return torch.autograd.grad(log_prob(mu, sigma, a).sum(), [mu, sigma])


def normal_log_prob(mu, sigma, a):
    return torch.distributions.Normal(mu, sigma).log_prob(a)


def reinforce(config: Config, progress) -> dict:
    """Train μ and ρ = ln σ with REINFORCE through the custom layer; return the per-epoch history."""
    g = torch.Generator().manual_seed(config.seed)
    optimum = torch.tensor(parse_list(config.optimum, "--optimum"))
    mu = torch.tensor(parse_list(config.mu, "--mu"), requires_grad=True)
    rho = torch.tensor(parse_list(config.sigma, "--sigma")).log().requires_grad_(True)  # σ = e^ρ > 0
    opt = torch.optim.Adam([mu, rho], lr=config.lr)
    history = {"mu": [], "sigma": [], "reward": [], "distance": [], "stopped": None}
    for epoch in range(1, config.epochs + 1):
        sigma = rho.exp()
        with torch.no_grad():  # sample actions: the policy acts, no gradient through the sampling
            a = mu + sigma * torch.randn(config.samples, len(mu), generator=g)
            r = -((a - optimum) ** 2).sum(dim=1)  # reward −‖a − a*‖²
        log_pi = GaussianLogProb.apply(mu.expand_as(a), sigma.expand_as(a), a).sum(dim=1)
        loss = -((r - r.mean()) * log_pi).mean()  # REINFORCE with a mean baseline
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not bool(torch.isfinite(mu).all() and torch.isfinite(rho).all()):  # blown up: stop and say where
            history["stopped"] = (f"μ or σ became non-finite at update {epoch} of {config.epochs}; training stopped. "
                                  f"The learning rate {config.lr} is too large: try --lr 0.05")
            break
        history["mu"].append(mu.detach().tolist())
        history["sigma"].append(rho.detach().exp().tolist())
        history["reward"].append(float(r.mean()))
        history["distance"].append(float((mu.detach() - optimum).norm()))
        if epoch % 25 == 0 or epoch == config.epochs:
            progress(f"REINFORCE epoch {epoch}/{config.epochs}  |μ − a*| {history['distance'][-1]:.3f}",
                     epoch, config.epochs)
    return history


def run(config: Config, device: torch.device | None = None,
        progress: Callable[[str, int, int], None] = lambda *a: None) -> Result:
    """Compare the three score computations, gradcheck the layer, train with REINFORCE. Pure: no printing."""
    torch.manual_seed(config.seed)
    mu = torch.tensor(parse_list(config.mu, "--mu"))
    sigma = torch.tensor(parse_list(config.sigma, "--sigma"))
    if config.action:
        a, a_note = torch.tensor(parse_list(config.action, "--action")), "given"
    else:
        a = mu + sigma * torch.randn(len(mu), generator=torch.Generator().manual_seed(config.seed))
        a_note = f"sampled from N(μ, σ²) with seed {config.seed}"

    closed = score_closed_form(mu, sigma, a)
    by_normal = score_autograd(mu, sigma, a, normal_log_prob)
    by_layer = score_autograd(mu, sigma, a, GaussianLogProb.apply)
    rows = []
    for i in range(len(mu)):
        for k, name in enumerate(("∂ ln π/∂μ", "∂ ln π/∂σ")):
            rows.append([i, name, float(mu[i]), float(sigma[i]), float(a[i]), float(closed[k][i]),
                         float(by_normal[k][i]), float(by_layer[k][i])])

    def diff(x, y):
        return max(float((u - v).abs().max()) for u, v in zip(x, y, strict=True))

    inputs64 = tuple(t.double().requires_grad_(True) for t in (mu, sigma, a))
    grad_ok = torch.autograd.gradcheck(GaussianLogProb.apply, inputs64, raise_exception=False)
    gradgrad_ok = torch.autograd.gradgradcheck(GaussianLogProb.apply, inputs64, raise_exception=False)

    history = reinforce(config, progress)
    if history["stopped"]:  # the claims about the trained policy fail (NaN): it never finished
        history["mu"].append([math.nan] * len(mu))
        history["sigma"].append([math.nan] * len(mu))
        history["reward"].append(math.nan)
        history["distance"].append(math.nan)
    reached = len(history["mu"])
    final_distance = history["distance"][-1]
    claims = [
        Claim("layer-equals-closed-form", "custom layer's gradients ≡ the closed forms (float32, max |Δ|)",
              diff(by_layer, closed), 1e-6),
        Claim("layer-equals-normal", "custom layer ≡ autograd through Normal(μ, σ).log_prob(a) (float32, max |Δ|)",
              diff(by_layer, by_normal), 1e-6),
        Claim.yes_no("gradcheck", "the layer passes gradcheck and gradgradcheck (float64)", grad_ok and gradgrad_ok),
        Claim("reinforce-reaches-optimum", f"REINFORCE with the layer: learned μ within {config.tolerance} of a* "
              f"(‖μ − a*‖)", final_distance, config.tolerance),
        Claim("sigma-shrinks", "σ shrinks in every dimension: max over dimensions of final σ_i / initial σ_i",
              max(f / s for f, s in zip(history["sigma"][-1], parse_list(config.sigma, "--sigma"), strict=True)),
              1.0, "<"),
    ]
    every = max(1, config.epochs // 10)
    epochs = sorted(set(range(every, reached + 1, every)) | {1, reached})
    train_rows = [[e, ", ".join(f"{v:.3f}" for v in history["mu"][e - 1]),
                   ", ".join(f"{v:.3f}" for v in history["sigma"][e - 1]), history["reward"][e - 1],
                   history["distance"][e - 1]] for e in epochs]
    x = list(range(1, reached + 1))
    return Result(
        lesson="gaussian-policy",
        title="a custom-gradient layer for a Gaussian policy's score function, trained with REINFORCE",
        seed=config.seed,
        metrics={"action": a.tolist(), "closed_form": [t.tolist() for t in closed],
                 "normal_log_prob": [t.tolist() for t in by_normal], "layer": [t.tolist() for t in by_layer],
                 "gradcheck": bool(grad_ok), "gradgradcheck": bool(gradgrad_ok), "final_mu": history["mu"][-1],
                 "final_sigma": history["sigma"][-1], "final_distance": final_distance},
        claims=claims,
        tables=[
            Table(f"the score function three ways (a {a_note})",
                  ["dim", "", "μ", "σ", "a", "closed form", "Normal.log_prob + autograd", "custom layer"], rows,
                  [None, None, ".4f", ".4f", ".4f", ".7f", ".7f", ".7f"]),
            Table(f"REINFORCE on the bandit r(a) = −‖a − a*‖², a* = ({config.optimum}), {config.samples} actions "
                  f"per update", ["epoch", "μ", "σ", "mean reward", "‖μ − a*‖"], train_rows,
                  [None, None, None, ".4f", ".4f"]),
        ],
        curves={
            "‖μ − a*‖ and σ": Curve("epoch", "value", x, {"‖μ − a*‖": history["distance"],
                                                          **{f"σ[{i}]": [s[i] for s in history["sigma"]]
                                                             for i in range(len(mu))}}, logy=True,
                                    refs={f"claim: ‖μ − a*‖ ≤ {config.tolerance:g}": config.tolerance}),
            "mean reward": Curve("epoch", "mean reward of the batch", x, {"reward": history["reward"]}),
        },
        stopped=history["stopped"],
    )
