"""gradlab ddp, in this process: gradient accumulation over micro-batches, against one backward over the whole
batch (the reference every claim is measured against). It runs in gradlab's own process, beside the workers."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from gradlab.kit.exercise import relative_to_largest
from gradlab.kit.training import cross_entropy, global_norm
from gradlab.lessons.ddp.batches import (
    Batches,
    ReluSigns,
    flat,
    micro_batch_sizes,
    new_model,
    same_signs,
    summed_cross_entropy,
)
from gradlab.lessons.ddp.settings import Config

# What each micro-batch's loss is before backward() adds its gradient into .grad (the keys the result uses).
MEAN_K = "mean/K"  # loss_k / K: the usual recipe
FORGOT_K = "mean"  # loss_k: the /K forgotten
SUM_B = "sum/B"  # Σ_i ℓ_i / B: right for any sizes
RECIPES = (FORGOT_K, MEAN_K, SUM_B)


def accumulate(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, sizes: list[int], recipe: str) -> None:
    """K backward() calls, one per micro-batch: .grad adds them up. RECIPE says what each micro-batch's loss is."""
    model.zero_grad()
    batch, parts = len(x), len(sizes)
    for xk, yk in zip(x.split(sizes), y.split(sizes), strict=True):
        if recipe == MEAN_K:
            loss = cross_entropy(model(xk), yk) / parts  # loss_k / K: the usual recipe
        elif recipe == FORGOT_K:
            loss = cross_entropy(model(xk), yk)  # the /K forgotten
        else:  # SUM_B
            loss = summed_cross_entropy(model(xk), yk) / batch  # Σ_i ℓ_i / B: right for any sizes
        loss.backward()  # .grad += ∂loss/∂θ


@dataclass
class Accumulated:
    """The single-process runs (accumulation()), filled in as they train: the full-batch reference, the accumulated
    runs on their own weights, and at every step of the reference each recipe's gradient at the same weights."""

    sizes: list[int]  # the micro-batches' sizes
    loss: dict[str, list[float]]  # the loss at every step of each run: "full" (the reference), MEAN_K, SUM_B
    norm_ratio: dict[str, list[float]]  # ‖a recipe's gradient‖ / ‖g‖ at every step, by recipe
    forgot_k: list[float] = field(default_factory=list)  # FORGOT_K's gradient against K·g (relative), every step
    mean_k: list[float] = field(default_factory=list)  # MEAN_K's against g
    sum_b: list[float] = field(default_factory=list)  # SUM_B's against g
    flipped: list[bool] = field(default_factory=list)  # a ReLU flipped between the whole batch and its parts
    wall_s: float = 0.0
    final: dict[str, torch.Tensor] = field(default_factory=dict)  # the flat weights at the end, by run
    weights_vs_full: dict[str, float] = field(default_factory=dict)  # each accumulated run's against "full"
    optimizers: list[dict] = field(default_factory=list)  # forgotten_k_by_optimizer's, added by the lesson
    single_s: float = 0.0  # single_process_seconds', added by the lesson


def accumulation(config: Config, batches: Batches, device,
                 stop_if_cancelled: Callable[[], None] = lambda: None) -> Accumulated:
    """The full-batch run (the reference for everything), the accumulated runs, and at every step of the reference
    the gradients of every recipe at the same weights. STOP_IF_CANCELLED() raises once the workers' job failed."""
    sizes = micro_batch_sizes(config.batch_size, config.micro_batches, config.uneven)
    K = len(sizes)
    ref = new_model(config, device)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=config.lr)
    trained = {recipe: new_model(config, device) for recipe in (MEAN_K, SUM_B)}  # each on its own weights
    trained_opt = {recipe: torch.optim.SGD(m.parameters(), lr=config.lr) for recipe, m in trained.items()}
    out = Accumulated(sizes=sizes, loss={"full": [], MEAN_K: [], SUM_B: []},
                      norm_ratio={recipe: [] for recipe in RECIPES})
    signs = ReluSigns(ref)
    start = time.perf_counter()
    for x, y in batches:
        loss = cross_entropy(ref(x), y)  # the reference: one backward over the whole batch
        g = torch.autograd.grad(loss, list(ref.parameters()))
        g_norm = global_norm(g)
        whole = signs.take()
        flipped = False
        for recipe in RECIPES:  # every recipe's gradient at the reference's weights
            accumulate(ref, x, y, sizes, recipe)
            flipped |= not same_signs(signs.take(), whole)  # a ReLU flipped between the two: not rounding
            got = [p.grad.clone() for p in ref.parameters()]
            out.norm_ratio[recipe].append(float(global_norm(got) / g_norm))
            if recipe == FORGOT_K:
                out.forgot_k.append(relative_to_largest(got, [K * t for t in g]))  # against K·g
            else:
                (out.mean_k if recipe == MEAN_K else out.sum_b).append(relative_to_largest(got, g))
        out.flipped.append(flipped)
        for p, gp in zip(ref.parameters(), g, strict=True):  # the reference steps with its own gradient
            p.grad = gp
        ref_opt.step()
        out.loss["full"].append(float(loss.detach()))
        for recipe, model in trained.items():  # the accumulated runs, each on its own weights
            accumulate(model, x, y, sizes, recipe)
            with torch.no_grad():
                out.loss[recipe].append(float(cross_entropy(model(x), y)))
            trained_opt[recipe].step()
        stop_if_cancelled()
    out.wall_s = time.perf_counter() - start
    out.final = {"full": flat(ref), **{recipe: flat(m) for recipe, m in trained.items()}}
    out.weights_vs_full = {recipe: relative_to_largest(out.final[recipe], out.final["full"])
                              for recipe in trained}
    return out


# The /K forgotten makes the gradient K× too large. What that does to a step depends on the optimizer:
#   SGD       Δθ = −lr·g                                            K·g: a K× longer step
#   Adam      Δθ = −lr·m̂/(√v̂ + ε), m ← β₁m + (1 − β₁)g, v ← β₂v + (1 − β₂)g²     m̂ ∝ K, √v̂ ∝ K: the same step,
#   RMSprop   Δθ = −lr·g/(√v + ε),  v ← αv + (1 − α)g², v₀ = 0 (torch's)           but for ε
# (torch/optim/adam.py, rmsprop.py) so with Adam or torch's RMSprop the bug barely shows. TF-1's RMSPropOptimizer
# is not scale-free from the start: its mean square starts at ones (tensorflow/python/training/rmsprop.py, 1.15:
# `init_rms = init_ops.ones_initializer(...)`), so while v ≈ 1 its step is about lr·g, K× larger with K·g.
OPTIMIZERS = (("SGD", None), ("Adam", 1e-3), ("RMSprop", 1e-3))  # (torch.optim class, lr; None: the lesson's --lr)
OPTIMIZER_STEPS = 10  # the first steps of the run are enough to show it, at a third of the cost of 30


def forgotten_k_by_optimizer(config: Config, batches: Batches, device,
                             stop_if_cancelled: Callable[[], None] = lambda: None) -> list[dict]:
    """Each optimizer trained twice from the same weights on the same first batches (at most OPTIMIZER_STEPS), each
    micro-batch's loss divided by K (right) and not (the /K forgotten): the first step's length with the bug ÷
    without it, how far apart the two runs end (‖θ_forgot − θ_right‖ ÷ ‖θ_right − θ₀‖, the distance the right run
    travelled) and their losses on the last batch."""
    sizes = micro_batch_sizes(config.batch_size, config.micro_batches, config.uneven)
    out = []
    for name, lr in OPTIMIZERS:
        lr = config.lr if lr is None else lr
        first, final, loss = {}, {}, {}
        for recipe in (MEAN_K, FORGOT_K):
            model = new_model(config, device)
            optimizer = getattr(torch.optim, name)(model.parameters(), lr=lr)
            start = flat(model)
            for step in range(min(len(batches), OPTIMIZER_STEPS)):
                x, y = batches[step]
                accumulate(model, x, y, sizes, recipe)
                optimizer.step()
                if step == 0:
                    first[recipe] = flat(model) - start
                stop_if_cancelled()
            with torch.no_grad():
                loss[recipe] = float(cross_entropy(model(x), y))
            final[recipe] = flat(model)
        travelled = (final[MEAN_K] - start).double().norm()
        out.append({"optimizer": name, "lr": lr, "steps": step + 1,
                    "first_step_ratio": float(first[FORGOT_K].double().norm() / first[MEAN_K].double().norm()),
                    "apart": float((final[FORGOT_K] - final[MEAN_K]).double().norm() / travelled),
                    "loss_right": loss[MEAN_K], "loss_forgot": loss[FORGOT_K]})
    return out


def single_process_seconds(config: Config, batches: Batches, device, stop_if_cancelled: Callable[[], None]) -> float:
    """How long one process takes for the whole run, one backward over the whole batch per step (for the speed
    table)."""
    model = new_model(config, device)
    opt = torch.optim.SGD(model.parameters(), lr=config.lr)
    start = time.perf_counter()
    for x, y in batches:
        opt.zero_grad()
        cross_entropy(model(x), y).backward()
        opt.step()
        stop_if_cancelled()
    return time.perf_counter() - start
