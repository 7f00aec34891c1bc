"""Gradient processing between compute and apply: clipping by global norm.

`optimizer.minimize(loss)` is two calls, compute and apply, and you may process the gradients between them:

    grads = torch.autograd.grad(loss, params)   1. compute   TF: tf.gradients(loss, params)
    grads = process(grads)                      2. process   TF: tf.clip_by_global_norm(...)
    p.grad = g for each p; optimizer.step()     3. apply     TF: opt.apply_gradients(...)

Clipping by global norm treats all the gradients as one long vector (tf.clip_by_global_norm):

    global_norm = sqrt(Σ_i ‖g_i‖²)
    g_i ← g_i · clip_norm / max(global_norm, clip_norm)

so the direction is kept and only the length is capped at clip_norm. With plain SGD a step is lr·g, so it is never
longer than lr · clip_norm (up to float32 rounding): the after-training table shows the longest step measured on the
parameters (÷ lr·clip_norm), beside the unclipped run's. Adam and RMSProp divide each coordinate by its own running
scale after the clip, so for them clipping bounds the gradient, not the step.

`torch.nn.utils.clip_grad_norm_` does step 2 in place on `.grad`, dividing by global_norm + 1e-6
(torch/nn/utils/clip_grad.py: `clip_coef = max_norm / (total_norm + 1e-6)`): its clipped gradients differ from
the formula by about 1e-6/global_norm, relatively.

---

In the code: three_step is the three steps, with PROCESS one of processor's functions: `global-norm` (the
formula above, gradlab/kit/training.py), `norm` (each tensor by its own norm, tf.clip_by_norm), `value` (every
element clamped to [−v, v], tf.clip_by_value, which changes the direction) or `none`. one_step is the usual
`loss.backward(); optimizer.step()`, which the three steps with no processing must match bit for bit. The global
norm is accumulated in float64: summed in float32, a "clipped" gradient could come out longer than clip_norm by
float32's summation error; the clipped gradients stay float32, so their norm can still exceed clip_norm by rounding.

Adam's first step is lr·g/(|g| + ε) ≈ lr on every coordinate whose |g| ≫ ε, whatever the clipped gradient's
length (torch/optim/adam.py's doc: θ ← θ − γ·m̂/(√v̂ + ε), with m̂ = g and v̂ = g² at the first step); a coordinate
whose gradient is 0, such as a weight from an always-black pixel, does not move. tests/test_clip_lesson.py
measures Adam breaking the SGD bound.

Models: `softmax` is the tutorial's (784→10, zero init, as in `gradlab mnist`); its gradients are small and
bounded, so clipping barely matters. `mlp` (784→256→256→10, ReLU, PyTorch's default init) with a large learning
rate is where gradients explode: unclipped SGD kills the network or overflows; clipped SGD trains.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from gradlab.kit import autograd_graph
from gradlab.kit.result import Claim, Column, Curve, Result, Table
from gradlab.kit.training import (
    DIVERGED,
    batches,
    clip_by_global_norm,
    cross_entropy,
    global_norm,
    make_model,
    prepare,
    torch_clip,
)
from gradlab.lessons.clip.settings import (  # the settings, declared once (no torch: --help reads them)
    Config,
)

EQUIVALENCE_STEPS = 50  # steps on which the three-step path is checked against backward(); step()


# The code `--explain` shows beside the math, read from this file at run time.
EXPLAIN = ("three_step", "processor", "one_step")
EXPLAIN_SHORT = ("three_step", "processor")  # what --explain prints in full; it names the others


# ---------------------------------------------------------------------------------------------------------------
# Processing: each function takes the list of gradients and returns the processed list (and never mutates).
# ---------------------------------------------------------------------------------------------------------------

def clip_by_norm(grads: list[torch.Tensor], clip_norm: float) -> list[torch.Tensor]:
    """Each tensor by its own norm: g · clip_norm / max(‖g‖, clip_norm), as tf.clip_by_norm."""
    out = []
    for g in grads:
        norm = torch.linalg.vector_norm(g, dtype=torch.float64)
        out.append(g * (norm.new_tensor(clip_norm) / torch.clamp(norm, min=clip_norm)))
    return out


def clip_by_value(grads: list[torch.Tensor], clip_value: float) -> list[torch.Tensor]:
    """Every element into [−v, v], as tf.clip_by_value: the direction changes."""
    return [g.clamp(-clip_value, clip_value) for g in grads]


def processor(mode: str, config: Config) -> Callable[[list[torch.Tensor]], list[torch.Tensor]]:
    return {
        "global-norm": lambda gs: clip_by_global_norm(gs, config.clip_norm),
        "norm": lambda gs: clip_by_norm(gs, config.clip_norm),
        "value": lambda gs: clip_by_value(gs, config.clip_value),
        "none": lambda gs: gs,
    }[mode]


# ---------------------------------------------------------------------------------------------------------------
# The model, and one step in the three explicit phases.
# ---------------------------------------------------------------------------------------------------------------

def three_step(model, optimizer, process, x, y):
    """compute → process → apply. Returns (cost, global norm before, global norm after, per-tensor grads after)."""
    params = list(model.parameters())
    cost = cross_entropy(model(x), y)
    grads = torch.autograd.grad(cost, params)  # 1. compute: gradients = tf.gradients(loss, params)
    processed = process(list(grads))  # 2. process: clipped_gradients, norm = tf.clip_by_global_norm(...)
    for p, g in zip(params, processed, strict=True):  # 3. apply_gradients(zip(clipped_gradients, params)): .grad
        p.grad = g
    optimizer.step()
    # The norms are measured in float64 so that the bound claims test the clipping, not the measurement.
    return (cost.detach(), global_norm([g.double() for g in grads]), global_norm([g.double() for g in processed]),
            processed)


def one_step(model, optimizer, x, y):
    """The usual single call: loss.backward(); optimizer.step() (TF: minimize)."""
    optimizer.zero_grad()
    cost = cross_entropy(model(x), y)
    cost.backward()
    optimizer.step()
    return cost.detach()


def graphs(config: Config, images: int = 4) -> list[autograd_graph.Graph]:
    """The cost's backward graph for --model on a few seeded random images, and under its leaves what
    clip_by_global_norm does after backward: their global norm, the scale clip_norm / max(global_norm, clip_norm),
    each leaf's gradient before and after."""
    model = make_model(config.model, config.seed, torch.device("cpu"))
    g = torch.Generator().manual_seed(config.seed)
    x = torch.rand(images, 784, generator=g)
    y = torch.nn.functional.one_hot(torch.randint(10, (images,), generator=g), 10).float()
    with autograd_graph.record():
        cost = cross_entropy(model(x), y)
    graph = autograd_graph.trace(cost, title=f"clip ({config.model}): the cost on {images} random images",
                                 names={"model": model})
    leaves = [n.id for n in graph.nodes if n.leaf]
    grads = [graph.leaf_grads[i] for i in leaves]
    norm = float(global_norm(grads))  # global_norm = sqrt(Σ_i ‖g_i‖²)
    scale = config.clip_norm / max(norm, config.clip_norm)
    for i, grad in zip(leaves, grads, strict=True):
        graph.nodes[i].facts.append(f"clipped ∇ {autograd_graph.summary(grad * scale)}  (×{scale:.4g})")
    autograd_graph.after_backward(
        graph, "clip_by_global_norm", leaves, result=torch.tensor(norm * scale),
        facts=[f"global norm √(Σ‖∇‖²) = {norm:.6g} over {len(leaves)} tensors",
               f"scale = clip_norm / max(norm, clip_norm) = {config.clip_norm:g} / {max(norm, config.clip_norm):.6g}"
               f" = {scale:.6g}",
               f"sends scale·∇ on to the optimizer: global norm {norm * scale:.6g}"])
    graph.note = (f"look at: clip_by_global_norm under the leaves: one scale ({scale:.4g}) for every gradient, "
                  f"so the direction is kept")
    return [graph]


@dataclass
class Run:
    """One training run with one way of processing the gradients (train()), filled in as it trains."""

    model: torch.nn.Module | None = None  # the trained model
    epoch_cost: list[float] = field(default_factory=list)  # mean cost of each epoch
    norm_mean: list[float] = field(default_factory=list)  # the global norm before processing: each epoch's mean ...
    norm_max: list[float] = field(default_factory=list)  # ... and its largest
    clipped_fraction: list[float] = field(default_factory=list)  # each epoch's share of steps processing changed
    step_norm_before: list[float] = field(default_factory=list)  # the global norm at every step, before ...
    step_norm_after: list[float] = field(default_factory=list)  # ... and after processing
    diverged: str | None = None  # where the cost became non-finite (or too large), or None
    wall_s: float = 0.0  # the training loop alone
    longest_step: float = 0.0  # the longest update ÷ what clipping allows (step_length)

    def metrics(self) -> dict:
        """What the result's metrics hold of the run (not the model; test_accuracy is added beside it)."""
        return {"epoch_cost": self.epoch_cost, "norm_mean": self.norm_mean, "norm_max": self.norm_max,
                "clipped_fraction": self.clipped_fraction, "diverged": self.diverged, "wall_s": self.wall_s,
                "longest_step": self.longest_step}


def train(mode: str, config: Config, x, y, orders, device, on_epoch=lambda e, c: None) -> Run:
    """Train with processing MODE. Divergence (a non-finite cost) ends the run and is reported, not raised."""
    model = make_model(config.model, config.seed, device)
    optimizer = torch.optim.SGD(model.parameters(), lr=config.lr)
    process = processor(mode, config)
    out = Run()
    params = list(model.parameters())
    longest = torch.zeros((), dtype=torch.float64, device=device)  # the longest step / its cap, over the run
    start = time.perf_counter()
    for epoch, order in enumerate(orders, start=1):
        costs, before, after = [], [], []
        for xb, yb in batches(x, y, order, config.batch_size):
            old = [p.detach().clone() for p in params]
            c, n_before, n_after, _ = three_step(model, optimizer, process, xb, yb)
            longest = torch.maximum(longest, step_length([p.detach() - o for p, o in zip(params, old, strict=True)],
                                                         mode, config))
            costs.append(c)
            before.append(n_before)
            after.append(n_after)
        c, nb, na = torch.stack(costs).double(), torch.stack(before).double(), torch.stack(after).double()
        out.step_norm_before += nb.tolist()
        out.step_norm_after += na.tolist()
        bad = (~torch.isfinite(c) | (c > DIVERGED)).nonzero()
        if len(bad):
            s = int(bad[0])
            out.diverged = f"cost {float(c[s]):.4g} at epoch {epoch}, step {s + 1}"
            out.epoch_cost.append(float(c[:s].mean()) if s else float("nan"))
            out.norm_mean.append(float(nb[:s + 1].mean()))
            out.norm_max.append(float(nb[:s + 1].max()))
            out.clipped_fraction.append(float((nb[:s + 1] > na[:s + 1] + 1e-12).double().mean()))
            break
        out.epoch_cost.append(float(c.mean()))
        out.norm_mean.append(float(nb.mean()))
        out.norm_max.append(float(nb.max()))
        out.clipped_fraction.append(float((nb > na + 1e-12).double().mean()))  # steps where processing acted
        on_epoch(epoch, out.epoch_cost[-1])
    out.wall_s = time.perf_counter() - start
    out.model = model
    out.longest_step = float(longest)
    return out


def step_length(steps: list[torch.Tensor], mode: str, config: Config) -> torch.Tensor:
    """How long one update Δθ (measured on the parameters) was, over what clipping allows an SGD step (1 at the cap):
    global-norm and none ‖Δθ‖ / (lr·clip_norm), norm max_i ‖Δθ_i‖ / (lr·clip_norm), value max |Δθ| / (lr·clip_value)."""
    if mode == "value":
        return max(s.abs().max() for s in steps).double() / (config.lr * config.clip_value)
    if mode == "norm":
        return max(torch.linalg.vector_norm(s, dtype=torch.float64) for s in steps) / (config.lr * config.clip_norm)
    return global_norm(steps) / (config.lr * config.clip_norm)


WARM_UP_STEPS = 5


def warm_up(modes: list[str], config: Config, x, y, order, device) -> None:
    """A few untimed steps of every run on a throwaway model before any timing, so that torch's first-call costs
    are not billed to whichever run comes first."""
    for mode in modes:
        model = make_model(config.model, config.seed, device)
        optimizer, process = torch.optim.SGD(model.parameters(), lr=config.lr), processor(mode, config)
        for xb, yb in itertools.islice(batches(x, y, order, config.batch_size), WARM_UP_STEPS):
            three_step(model, optimizer, process, xb, yb)


def accuracy(model, x, labels) -> float:
    with torch.no_grad():
        return float((model(x).argmax(dim=1) == labels).double().mean())


# ---------------------------------------------------------------------------------------------------------------
# Checks behind the claims.
# ---------------------------------------------------------------------------------------------------------------

def equivalence_check(config: Config, x, y, order, device) -> float:
    """Max |Δparam| between compute → (no processing) → apply and backward(); step(), over the first steps."""
    a, b = make_model(config.model, config.seed, device), make_model(config.model, config.seed, device)
    opt_a, opt_b = torch.optim.SGD(a.parameters(), lr=config.lr), torch.optim.SGD(b.parameters(), lr=config.lr)
    for xb, yb in itertools.islice(batches(x, y, order, config.batch_size), EQUIVALENCE_STEPS):
        three_step(a, opt_a, processor("none", config), xb, yb)
        one_step(b, opt_b, xb, yb)
    with torch.no_grad():
            return max(float((p - q).abs().max()) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def torch_agreement(config: Config, x, y, order, device) -> tuple[float, float]:
    """Our global norm and clipping vs clip_grad_norm_, in float64, on the real gradients of the first steps.

    Returns (max relative difference of the norms, max relative difference of the clipped gradients).
    """
    model = make_model(config.model, config.seed, device)
    optimizer = torch.optim.SGD(model.parameters(), lr=config.lr)
    params = list(model.parameters())
    worst_norm = worst_grad = 0.0
    for xb, yb in itertools.islice(batches(x, y, order, config.batch_size), EQUIVALENCE_STEPS):
        grads = [g.double() for g in torch.autograd.grad(cross_entropy(model(xb), yb), params)]
        theirs_norm, theirs = torch_clip(grads, config.clip_norm)
        mine = global_norm(grads)
        worst_norm = max(worst_norm, float((mine - theirs_norm).abs() / mine))
        ours = clip_by_global_norm(grads, config.clip_norm)
        scale = max(float(global_norm(ours)), 1e-30)
        worst_grad = max(worst_grad, max(float((o - t).abs().max()) for o, t in zip(ours, theirs, strict=True)) / scale)
        for p, g in zip(params, ours, strict=True):
            p.grad = g.to(p.dtype)
        optimizer.step()  # move on along the clipped trajectory
    return worst_norm, worst_grad


def first_batch_norm_by_hand(x, y) -> float:
    """At W = b = 0 every class has p = 1/10: ‖xᵀ(p − y)/B‖² + ‖mean(p − y)‖², square-rooted."""
    d = (torch.full_like(y, 0.1) - y) / len(x)
    return float(torch.sqrt((x.T @ d).pow(2).sum() + d.sum(0).pow(2).sum()))


def first_batch_norm(model_name: str, seed: int, x, y, device) -> float:
    """The global norm of the gradient on batch (X, Y) at model MODEL_NAME's initial weights."""
    model = make_model(model_name, seed, device)
    return float(global_norm(list(torch.autograd.grad(cross_entropy(model(x), y), list(model.parameters())))))


def equivalence_claims(config: Config, x, y, order, device) -> list[Claim]:
    """Compute → apply ≡ backward + step, and our norm and clipping ≡ torch's clip_grad_norm_."""
    three_step = equivalence_check(config, x, y, order, device)
    norm_diff, grad_diff = torch_agreement(config, x, y, order, device)
    return [
        Claim("three-step-equals-one-step", f"compute → apply with no processing ≡ loss.backward(); optimizer.step(): "
              f"max |Δparam| after {EQUIVALENCE_STEPS} steps", three_step, 0.0),
        Claim("global-norm-equals-torch", f"our sqrt(Σ‖g_i‖²) ≡ clip_grad_norm_'s total norm (float64, first "
              f"{EQUIVALENCE_STEPS} steps, relative)", norm_diff, 1e-7),
        # torch divides by (norm + 1e-6), so its scale differs from ours by at most 1e-6/clip_norm, relatively.
        Claim("clipped-equals-torch", "our clipped gradients ≡ clip_grad_norm_'s (relative; torch divides by norm + "
              "1e-6)", grad_diff, 1e-6 / config.clip_norm + 1e-12),
    ]


def run(config: Config, data, device: torch.device | None = None,
        progress: Callable[[str, int, int], None] = lambda *a: None) -> Result:
    """Train with the chosen processing (and without, with --compare); check the claims. Pure: no printing."""
    device = device or torch.device("cpu")
    x, y, x_test, labels_test, orders, notes, images = prepare(config, data, device)
    n_train, n_test = len(x), len(x_test)
    runs = [config.clip] + (["none"] if config.compare and config.clip != "none" else [])
    warm_up(runs, config, x, y, orders[0], device)
    results = {}
    for i, mode in enumerate(runs):
        def on_epoch(e, c, i=i, mode=mode):
            progress(f"{mode:11s} epoch {e}/{config.epochs}  cost {c:.4f}", i * config.epochs + e,
                     len(runs) * config.epochs)

        results[mode] = train(mode, config, x, y, orders, device, on_epoch)

    # The very first batch's gradient norm: at this model's initial weights, and for the tutorial's softmax
    # at zero init (reported whatever --model says; the tutorial printed no gradient norm).
    first_x, first_y = next(batches(x, y, orders[0], config.batch_size))
    first_norm = {name: first_batch_norm(model, config.seed, first_x, first_y, device)
                  for name, model in (("model_init", config.model), ("softmax_zero_init", "softmax"))}
    claims = equivalence_claims(config, x, y, orders[0], device)
    by_hand = first_batch_norm_by_hand(first_x, first_y)
    claims.append(Claim("first-norm-by-hand", "the tutorial's softmax: first batch's global norm at zero init ≡ the "
                                              "formula with p = 1/10 (relative difference)",
                        abs(first_norm["softmax_zero_init"] - by_hand) / by_hand, 1e-6))

    metrics = {}
    for mode, r in results.items():
        metrics[mode] = {**r.metrics(),
                         "test_accuracy": accuracy(r.model, x_test, labels_test) if not r.diverged else math.nan}
    metrics["first_batch_global_norm"] = first_norm
    if any(r.diverged for r in results.values()):
        notes += [f"{m} diverged: {r.diverged}" for m, r in results.items() if r.diverged]
    return Result(
        lesson="clip",
        title="compute → process → apply gradients, with clipping by global norm",
        seed=config.seed, data=data.info(n_train, n_test, images), metrics=metrics, claims=claims,
        tables=tables(results, metrics, config, first_norm),
        curves=curves(results, config),
        notes=notes,
    )


def tables(results: dict[str, Run], metrics: dict, config: Config, first_norm: dict[str, float]) -> list[Table]:
    rows = []
    for e in range(config.epochs):
        for m, r in results.items():
            if e < len(r.epoch_cost):
                rows.append([e + 1, m, r.epoch_cost[e], r.norm_mean[e], r.norm_max[e], r.clipped_fraction[e]])
    per_epoch = Table("per epoch: cost, and the global norm of the gradient before processing",
                      [Column(header="epoch"), Column(header="run"), Column(header="cost", format=".4f"),
                       Column(header="norm mean", format=".3g"), Column(header="norm max", format=".3g"),
                       Column(header="steps clipped", format=".0%")], rows)
    cap = "lr·clip_value" if config.clip == "value" else "lr·clip_norm"
    summary = Table("after training",
                    [Column(header="run"), Column(header="test accuracy", format=".4f"), Column(header="diverged"),
                     Column(header=f"longest step ÷ {cap}", format=".4g"), Column(header="wall s", format=".2f")],
                    [[m, metrics[m]["test_accuracy"], metrics[m]["diverged"] or "no", metrics[m]["longest_step"],
                      metrics[m]["wall_s"]] for m in results],
                    note=f"wall s: the training loop alone, after {WARM_UP_STEPS} untimed warm-up steps of every run; "
                         f"global norm of the very first batch's gradient: {first_norm['model_init']:.6f} at the "
                         f"{config.model}'s initial weights"
                         + ("" if config.model == "softmax" else
                            f"; {first_norm['softmax_zero_init']:.6f} for the tutorial's softmax at zero init")
                         + (" (zero init)" if config.model == "softmax" else "")
                         + "; longest step: the longest update measured on the parameters as they moved (‖Δθ‖ for "
                           "global-norm and none, per tensor for norm, per number for value) ÷ what clipping allows an "
                           "SGD step; with SGD a clipped step is −lr·clip(g), at most 1 by construction (up to float32 "
                           "rounding), so it is "
                           "shown here, not claimed (Adam's steps are not lr times the clipped gradient)")
    return [per_epoch, summary]


def curves(results: dict[str, Run], config: Config) -> dict[str, Curve]:
    n = max(len(r.step_norm_before) for r in results.values())
    series = {}
    for m, r in results.items():
        series[f"{m}: before"] = r.step_norm_before
        if m != "none":
            series[f"{m}: after"] = r.step_norm_after
    refs = {"global-norm": {f"clip norm c = {config.clip_norm:g}": config.clip_norm},
            "norm": {f"clip norm c = {config.clip_norm:g} (per tensor)": config.clip_norm}}.get(config.clip, {})
    return {
        "gradient global norm per step": Curve("step", "global norm", list(range(1, n + 1)), series, logy=True,
                                               refs=refs),
        "epoch cost": Curve("epoch", "cost", list(range(1, config.epochs + 1)),
                            {m: r.epoch_cost for m, r in results.items()}),
    }
