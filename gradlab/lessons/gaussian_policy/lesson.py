"""A custom-gradient layer for a Gaussian policy's score function, trained with REINFORCE.

A Gaussian policy π(a|s) = N(μ, σ²) per action dimension has

    ln π(a) = −(a − μ)²/(2σ²) − ln σ − ½ ln 2π

and its score function (the gradient REINFORCE multiplies by the return) in closed form:

    ∂ ln π/∂μ = (a − μ)/σ²
    ∂ ln π/∂σ = ((a − μ)² − σ²)/σ³

The layer is a `torch.autograd.Function` whose forward is ln π and whose backward is that closed form (and
∂ ln π/∂a = −(a − μ)/σ²), checked against `Normal(μ, σ).log_prob(a)` and `gradcheck`, then used to train a policy
on a one-step bandit with a known optimum:

    reward r(a) = −‖a − a*‖²                 the best policy is μ = a*, σ → 0
    loss = −mean_k (r_k − b_k) ln π(a_k)     REINFORCE
    b_k  = Σ_{j≠k} r_j/(N − 1)               the other actions' mean reward (leave-one-out)

Autograd through ln π gives the same scores, as long as the action is a constant: never differentiate through the
sampled action (sample under `torch.no_grad()`, or `Normal.sample()`, not `rsample()`).

---

In the code: reinforce is the training loop (actions sampled under no_grad, the layer applied to them,
leave_one_out the baseline); the layer itself is the exercise gaussian-policy.GaussianLogProb, and the closed-form
score the exercise gaussian-policy.score, so their code is not shown here. score_through_sample is the mistake:
through a = μ + σε, ln π = −ε²/2 − ln σ − ½ ln 2π, whose gradient is (0, −1/σ), not the score (the claim
through-sample-differs; at a = μ, ε = 0, the two coincide). seed_layer is the tutorial's layer ported line by
line, bugs included (the lesson's page lists them).

The baseline is leave-one-out: b_k does not depend on a_k, so E[(r_k − b_k) ∇ ln π(a_k)] = ∇E[r] (unbiased), and it
cuts the variance. The batch mean with r_k in it does not: r_k − mean(r) = (N − 1)/N · (r_k − b_k), so it shrinks
the expected gradient by (N − 1)/N, 63/64 at the default 64 samples (a test checks the identity and both
expectations). Adam divides by the gradient's own running scale (torch/optim/adam.py: m̂/(√v̂ + ε)), so that
constant factor hardly changes this run; with SGD it would shrink every step.

σ = exp(ρ) keeps σ > 0 while the layer's σ-gradient flows through the chain rule into ρ. Adam moves each
coordinate by about lr per update when the gradient keeps its sign (m̂/√v̂ ≈ ±1; the lesson measures the largest
step of μ), so μ needs about |a* − μ₀|/lr updates to arrive, whatever the gradient's quality: exact_adam runs Adam
on the exact gradient of −E[r] = ‖μ − a*‖² + Σσ², same lr, same start, and the REINFORCE table shows it beside.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from gradlab.kit import autograd_graph
from gradlab.kit.result import Claim, Column, Curve, Result, Table
from gradlab.lessons.gaussian_policy.settings import (  # the settings, declared once (no torch: --help reads them)
    Config,
    parse_list,
)

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)

# The code `--explain` shows beside the math, read from this file at run time.
EXPLAIN = ("leave_one_out", "score_through_sample", "reinforce", "seed_layer", "exact_adam")
EXPLAIN_SHORT = ("leave_one_out", "score_through_sample")  # what --explain prints in full; it names the others


class GaussianLogProb(torch.autograd.Function):
    """ln N(a; μ, σ²) forward; the closed-form score function backward (what the tutorial's layer meant to be)."""

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


def score_through_sample(mu, sigma, a):
    """The mistake that makes the score look impossible to get from autograd: differentiate ln π(a) with the action
    a = μ + σε still attached to μ and σ (TF-1's reparameterized sample used as it is; torch's rsample()).
    Then ln π = −ε²/2 − ln σ − ½ ln 2π, and autograd returns (0, −1/σ): right for that function, not the score."""
    eps = (a - mu) / sigma  # the ε that drew a
    mu, sigma = mu.clone().requires_grad_(True), sigma.clone().requires_grad_(True)
    attached = mu + sigma * eps  # not detached: depends on μ and σ
    return torch.autograd.grad(normal_log_prob(mu, sigma, attached).sum(), [mu, sigma])


LOOK = {  # what each of graphs()'s drawings shows
    "the layer (GaussianLogProb)": "look at: one node, its closed-form backward: the score (a − μ)/σ² at mu",
    "autograd through Normal.log_prob": "look at: the same gradients at mu and sigma, op by op",
    "through an attached sample": "look at: the extra paths through the sample: the score collapses to (0, −1/σ)",
}


def graphs(config: Config) -> list[autograd_graph.Graph]:
    """ln π(a) differentiated three ways: the layer (one node, its closed-form backward), autograd through
    Normal.log_prob, and through a sample still attached to μ and σ (extra paths: the score looks like (0, −1/σ))."""
    mu0, sigma0 = torch.tensor(parse_list(config.mu, "mu")), torch.tensor(parse_list(config.sigma, "sigma"))
    a, _ = action(config, mu0, sigma0)  # as run() draws it
    out = []
    for name in ("the layer (GaussianLogProb)", "autograd through Normal.log_prob", "through an attached sample"):
        mu, sigma = mu0.clone().requires_grad_(True), sigma0.clone().requires_grad_(True)
        with autograd_graph.record():
            if name.startswith("the layer"):
                log_pi = GaussianLogProb.apply(mu, sigma, a).sum()
            elif name.startswith("autograd"):
                log_pi = normal_log_prob(mu, sigma, a).sum()
            else:
                log_pi = normal_log_prob(mu, sigma, mu + sigma * ((a - mu0) / sigma0)).sum()  # a = μ + σε, attached
        out.append(autograd_graph.trace(log_pi, title=f"gaussian-policy, {name}: Σ ln π(a)",
                                        names={"mu": mu, "sigma": sigma}, note=LOOK[name]))
    return out


def seed_layer(y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The tutorial's sample_normal_dist_grad_layer ported line by line, bugs included, on its input
    y = [μ₀, μ₁, σ₀, σ₁] per row (the global y it reads is the y it is called on). Returns (the action, the
    forward's output, the
    gradient its backward sends to y for tf.gradients' default dy = ones)."""
    mu = y[:, 0:2]  # mu = y[:, 0: 2]
    sigma = y[:, 2:4]  # sigma = y[:, 2: 4]
    # dist = tf.distributions.Normal(loc=0., scale=0.); sample = dist.sample(tf.shape(x)[0]):
    # TF-1's _sample_n is random_normal(shape) * scale + loc = ε · 0 + 0, of shape [n] (not [n, 2])
    sample = torch.randn(y.shape[0], dtype=y.dtype, generator=torch.Generator().manual_seed(0)) * 0.0 + 0.0
    action = sample * sigma + mu  # out = sample * sigma + mu: [n] against [n, 2] broadcasts along the last axis
    mu_loss = (action - mu) / (sigma**2)  # mu_loss = (out - mu) / (sigma ** 2)
    sigma_loss = ((action - mu) ** 2 - sigma**2) / (sigma**3)  # sigma_loss = ((out - mu) ** 2 - sigma ** 2) / ...
    out = torch.cat([mu_loss, sigma_loss], dim=-1)  # out = tf.concat([mu_loss, sigma_loss], axis=-1)
    dy = torch.ones_like(out)  # tf.gradients(policy_loss, y): grad_ys defaults to ones
    grads = y * dy  # def grad(dy): grads = _y * dy; return grads
    return action, out, grads


def seed_broadcast_error(n: int = 3) -> str:
    """What the tutorial's `sample * sigma` does with n input rows: an [n] sample against an [n, 2] σ."""
    try:
        torch.zeros(n) * torch.ones(n, 2)
    except RuntimeError as err:
        return str(err).splitlines()[0]
    return "(no error)"


def leave_one_out(r: torch.Tensor) -> torch.Tensor:
    """b_k = Σ_{j≠k} r_j/(N − 1): a baseline that does not depend on a_k (unbiased); the batch mean would shrink the
    expected gradient by (N − 1)/N, since r_k − mean(r) = (N − 1)/N · (r_k − b_k)."""
    return (r.sum() - r) / (len(r) - 1)


@dataclass
class History:
    """A REINFORCE run (reinforce()), epoch by epoch, filled in as it trains."""

    mu: list[list[float]] = field(default_factory=list)  # μ after each update
    sigma: list[list[float]] = field(default_factory=list)  # σ after each update
    reward: list[float] = field(default_factory=list)  # the batch's mean reward at each update
    distance: list[float] = field(default_factory=list)  # ‖μ − a*‖ after each update
    max_mu_step: float = 0.0  # the largest step of any coordinate of μ in one update
    stopped: str | None = None  # why training stopped early (μ or σ became non-finite), or None


@dataclass(frozen=True)
class Exact:
    """Adam on the exact gradient (exact_adam())."""

    distance: list[float]  # ‖μ − a*‖ after each update
    max_mu_step: float  # the largest step of any coordinate of μ in one update


def reinforce(config: Config, progress) -> History:
    """Train μ and ρ = ln σ with REINFORCE through the custom layer; return the per-epoch history."""
    g = torch.Generator().manual_seed(config.seed)
    optimum = torch.tensor(parse_list(config.optimum, "optimum"))
    mu = torch.tensor(parse_list(config.mu, "mu"), requires_grad=True)
    rho = torch.tensor(parse_list(config.sigma, "sigma")).log().requires_grad_(True)  # σ = e^ρ > 0
    opt = torch.optim.Adam([mu, rho], lr=config.lr)
    history = History()
    for epoch in range(1, config.epochs + 1):
        sigma = rho.exp()
        with torch.no_grad():  # sample actions: the policy acts, no gradient through the sampling
            a = mu + sigma * torch.randn(config.samples, len(mu), generator=g)
            r = -((a - optimum) ** 2).sum(dim=1)  # reward −‖a − a*‖²
        log_pi = GaussianLogProb.apply(mu.expand_as(a), sigma.expand_as(a), a).sum(dim=1)
        loss = -((r - leave_one_out(r)) * log_pi).mean()  # REINFORCE with a leave-one-out baseline
        opt.zero_grad()
        loss.backward()
        before = mu.detach().clone()
        opt.step()
        if not bool(torch.isfinite(mu).all() and torch.isfinite(rho).all()):  # blown up: stop and say where
            history.stopped = (f"μ or σ became non-finite at update {epoch} of {config.epochs}; training stopped. "
                              f"The learning rate {config.lr} may be too large (try a smaller lr), or σ too "
                              f"small or too large for float32 (sigma)")
            break
        history.max_mu_step = max(history.max_mu_step, float((mu.detach() - before).abs().max()))
        history.mu.append(mu.detach().tolist())
        history.sigma.append(rho.detach().exp().tolist())
        history.reward.append(float(r.mean()))
        history.distance.append(float((mu.detach() - optimum).norm()))
        if epoch % 25 == 0 or epoch == config.epochs:
            progress(f"REINFORCE epoch {epoch}/{config.epochs}  |μ − a*| {history.distance[-1]:.3f}",
                     epoch, config.epochs)
    return history


def exact_adam(config: Config) -> Exact:
    """Adam on the exact gradient of −E[r] = ‖μ − a*‖² + Σσ² (E over a ~ N(μ, σ²)), from the same start with the
    same lr and number of updates: how far μ can get when the gradient is perfect."""
    optimum = torch.tensor(parse_list(config.optimum, "optimum"))
    mu = torch.tensor(parse_list(config.mu, "mu"), requires_grad=True)
    rho = torch.tensor(parse_list(config.sigma, "sigma")).log().requires_grad_(True)
    opt = torch.optim.Adam([mu, rho], lr=config.lr)
    distance, max_step = [], 0.0
    for _ in range(config.epochs):
        loss = ((mu - optimum) ** 2).sum() + (rho.exp() ** 2).sum()  # −E[−‖a − a*‖²] = ‖μ − a*‖² + Σσ²
        opt.zero_grad()
        loss.backward()
        before = mu.detach().clone()
        opt.step()
        if not bool(torch.isfinite(mu).all()):
            distance.append(math.nan)
            break
        max_step = max(max_step, float((mu.detach() - before).abs().max()))
        distance.append(float((mu.detach() - optimum).norm()))
    return Exact(distance=distance, max_mu_step=max_step)


def action(config: Config, mu: torch.Tensor, sigma: torch.Tensor) -> tuple[torch.Tensor, str]:
    """The action the scores are computed at, and where it came from: config.action, or one draw from N(μ, σ²)."""
    if config.action:
        return torch.tensor(parse_list(config.action, "action")), "given"
    a = mu + sigma * torch.randn(len(mu), generator=torch.Generator().manual_seed(config.seed))
    return a, f"sampled from N(μ, σ²) with seed {config.seed}"


def run(config: Config, device: torch.device | None = None,
        progress: Callable[[str, int, int], None] = lambda *a: None) -> Result:
    """Compare the score computations, run the tutorial's layer, gradcheck ours, train with REINFORCE. Pure: no
    printing."""
    torch.manual_seed(config.seed)
    mu = torch.tensor(parse_list(config.mu, "mu"))
    sigma = torch.tensor(parse_list(config.sigma, "sigma"))
    a, a_note = action(config, mu, sigma)

    # the score four ways, and the layer's backward checked numerically (float64)
    scores = {"closed": score_closed_form(mu, sigma, a), "normal": score_autograd(mu, sigma, a, normal_log_prob),
              "layer": score_autograd(mu, sigma, a, GaussianLogProb.apply),
              "through": score_through_sample(mu, sigma, a)}
    inputs64 = tuple(t.double().requires_grad_(True) for t in (mu, sigma, a))
    grad_ok = torch.autograd.gradcheck(GaussianLogProb.apply, inputs64, raise_exception=False)
    gradgrad_ok = torch.autograd.gradgradcheck(GaussianLogProb.apply, inputs64, raise_exception=False)
    tables = [score_table(mu, sigma, a, a_note, scores)]
    if len(mu) == 2:  # the tutorial's layer is written for two action dimensions: y = [μ₀, μ₁, σ₀, σ₁]
        tables.append(tutorial_layer_table(mu, sigma, scores["closed"]))

    # REINFORCE with the layer, beside Adam on the exact gradient
    history = reinforce(config, progress)
    if history.stopped:  # the claims about the trained policy fail (NaN): it never finished
        history.mu.append([math.nan] * len(mu))
        history.sigma.append([math.nan] * len(mu))
        history.reward.append(math.nan)
        history.distance.append(math.nan)
    exact = exact_adam(config)
    tables.append(training_table(config, history, exact))
    return Result(
        lesson="gaussian-policy",
        title="a custom-gradient layer for a Gaussian policy's score function, trained with REINFORCE",
        seed=config.seed,
        metrics={"action": a.tolist(), "closed_form": [t.tolist() for t in scores["closed"]],
                 "normal_log_prob": [t.tolist() for t in scores["normal"]],
                 "layer": [t.tolist() for t in scores["layer"]],
                 "through_sample": [t.tolist() for t in scores["through"]],
                 "gradcheck": bool(grad_ok), "gradgradcheck": bool(gradgrad_ok), "final_mu": history.mu[-1],
                 "final_sigma": history.sigma[-1], "final_distance": history.distance[-1],
                 "baseline": "leave-one-out", "max_mu_step": history.max_mu_step,
                 "exact_final_distance": exact.distance[-1], "exact_max_mu_step": exact.max_mu_step},
        claims=claims(config, scores, grad_ok and gradgrad_ok, history),
        tables=tables,
        curves=curves(config, history, exact),
        stopped=history.stopped,
    )


def claims(config: Config, scores: dict, gradchecks: bool, history: History) -> list[Claim]:
    def diff(x, y):
        return max(float((u - v).abs().max()) for u, v in zip(x, y, strict=True))

    def relative_each(x, y):  # each |Δ| in units of max(1, |y|) at its own place: float32 keeps ~7 digits of a score
        # of any size (kit.exercise.difference divides by one max(1, |y|) per tensor)
        return max(float(((u - v).abs() / v.abs().clamp_min(1)).max()) for u, v in zip(x, y, strict=True))

    return [
        Claim("layer-equals-normal", "custom layer ≡ autograd through Normal(μ, σ).log_prob(a) (float32, max |Δ| "
              "relative to max(1, |score|))", relative_each(scores["layer"], scores["normal"]), 1e-6),
        Claim.yes_no("gradcheck", "the layer passes gradcheck and gradgradcheck (float64)", gradchecks),
        Claim("through-sample-differs", "differentiating through the sampled action (a = μ + σε not detached) does "
              "not give the score (max |Δ| from the closed form)", diff(scores["through"], scores["closed"]), 1e-3,
              ">"),
        Claim("reinforce-reaches-optimum", f"REINFORCE with the layer: learned μ within {config.tolerance} of a* "
              f"(‖μ − a*‖)", history.distance[-1], config.tolerance),
        Claim("sigma-shrinks", "σ shrinks in every dimension: max over dimensions of final σ_i / initial σ_i",
              max(f / s for f, s in zip(history.sigma[-1], parse_list(config.sigma, "sigma"), strict=True)),
              1.0, "<"),
    ]


def curves(config: Config, history: History, exact: Exact) -> dict[str, Curve]:
    x = list(range(1, len(history.mu) + 1))
    sigmas = {f"σ[{i}]": [s[i] for s in history.sigma] for i in range(len(history.sigma[0]))}
    return {
        "‖μ − a*‖ and σ": Curve("epoch", "value", x, {"‖μ − a*‖": history.distance,
                                                      "‖μ − a*‖, exact gradient": exact.distance[:len(x)],
                                                      **sigmas}, logy=True,
                                refs={f"claim: ‖μ − a*‖ ≤ {config.tolerance:g}": config.tolerance}),
        "mean reward": Curve("epoch", "mean reward of the batch", x, {"reward": history.reward}),
    }


def score_table(mu, sigma, a, a_note: str, scores: dict) -> Table:
    """Each dimension's two scores, computed the four ways of SCORES."""
    rows = []
    for i in range(len(mu)):
        for k, name in enumerate(("∂ ln π/∂μ", "∂ ln π/∂σ")):
            rows.append([i, name, float(mu[i]), float(sigma[i]), float(a[i]),
                         *(float(scores[way][k][i]) for way in ("closed", "normal", "layer", "through"))])
    return Table(f"the score function four ways (a {a_note})",
                 [Column(header="dim"), Column(header=""), *(Column(header=h, format=".4f") for h in ("μ", "σ", "a")),
                  *(Column(header=h, format=".7f") for h in ("closed form", "Normal.log_prob + autograd",
                                                             "custom layer", "autograd through a = μ + σε"))], rows,
                 note="the custom layer's backward is the closed form, so those two columns agree by construction "
                      "(a measured fact, not a claim); the claims compare it with Normal.log_prob + autograd")


def tutorial_layer_table(mu, sigma, closed) -> Table:
    """The tutorial's layer ported line by line (seed_layer), on one input row y = [μ₀, μ₁, σ₀, σ₁] as it feeds."""
    y = torch.cat([mu, sigma]).unsqueeze(0)
    seed_action, seed_out, seed_grads = seed_layer(y)
    return Table("the tutorial's layer, ported line by line on y = [μ₀, μ₁, σ₀, σ₁] (one input row, as the tutorial "
                 "feeds), beside the score at this lesson's action",
                 [Column(header=""), Column(header="the tutorial's line"),
                  *(Column(header=h, format=".7f") for h in ("μ₀", "μ₁", "σ₀", "σ₁"))],
                 [["action a", "out = sample * sigma + mu", *seed_action[0].tolist(), None, None],
                  ["forward output", "out = tf.concat([mu_loss, sigma_loss])", *seed_out[0].tolist()],
                  ["gradient sent to y", "grads = _y * dy (dy = ones)", *seed_grads[0].tolist()],
                  ["the score (intended)", "closed form at a", *[float(closed[0][i]) for i in range(2)],
                   *[float(closed[1][i]) for i in range(2)]]],
                 note=f"Normal(loc=0., scale=0.) samples 0, so a = μ and the forward is (0, 0, −1/σ₀, −1/σ₁); the "
                      f"backward returns y. With 3 input rows, sample * sigma ([3] × [3, 2]) fails: "
                      f"{seed_broadcast_error(3)}")


def training_table(config: Config, history: History, exact: Exact) -> Table:
    """REINFORCE's μ, σ, reward and distance to a* at about ten epochs, beside Adam on the exact gradient."""
    reached = len(history.mu)
    every = max(1, config.epochs // 10)
    epochs = sorted(set(range(every, reached + 1, every)) | {1, reached})
    exact_d = exact.distance
    rows = [[e, ", ".join(f"{v:.3f}" for v in history.mu[e - 1]),
             ", ".join(f"{v:.3f}" for v in history.sigma[e - 1]), history.reward[e - 1],
             history.distance[e - 1], exact_d[min(e, len(exact_d)) - 1]] for e in epochs]
    return Table(f"REINFORCE on the bandit r(a) = −‖a − a*‖², a* = ({config.optimum}), {config.samples} actions per "
                 f"update, leave-one-out baseline; beside it Adam on the exact gradient",
                 [Column(header="epoch"), Column(header="μ"), Column(header="σ"),
                  *(Column(header=h, format=".4f") for h in ("mean reward", "‖μ − a*‖", "‖μ − a*‖, exact gradient"))],
                 rows,
                 note=f"the largest step of any coordinate of μ in one update: REINFORCE "
                      f"{history.max_mu_step:.4f}, exact gradient {exact.max_mu_step:.4f} (lr {config.lr:g})")
