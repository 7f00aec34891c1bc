"""MNIST softmax regression: `optimizer.minimize(cost)` is "compute the gradients, then apply them".

    z    = x W + b                       x: B×784, W: 784×10, b: 10
    p    = softmax(z)
    cost = mean_i( −Σ_k y_ik log p_ik )  cross-entropy with one-hot labels y

Softmax and cross-entropy together have a simple gradient, derived by hand:

    ∂cost/∂z = (p − y) / B
    ∂cost/∂W = xᵀ (p − y) / B
    ∂cost/∂b = mean_i (p − y)

Three ways to take the step W ← W − lr·∂cost/∂W (and b's), which must agree on the same batches:

    optimizer  torch.optim.SGD: zero_grad(); cost.backward(); step()
               TF: GradientDescentOptimizer(lr).minimize(cost)
    manual     gW, gb = torch.autograd.grad(cost, [W, b]); W ← W − lr·gW
               TF: grad_W, grad_b = tf.gradients(xs=[W, b], ys=cost); W.assign(W − lr·grad_W)
    analytic   the formulas above, computed directly: no autograd (what autograd does for us)

`.backward()` *adds* into `.grad`, which is why the optimizer way needs `zero_grad()`; `autograd.grad` returns
fresh tensors and changes no parameter, as `tf.gradients` does.

---

In the code: optimizer_step, manual_step and analytic_step each make a step(x, y) that updates W and b in place and
returns the cost before the update; the epoch cost is the mean of those (the tutorial's too). The batches are one
permutation per epoch, seeded by --seed and shared by the three ways; `--no-shuffle` takes them in file order.

The autograd ways take the cost from `F.cross_entropy(z, labels)`: the same cost with the labels as class numbers
instead of one-hot rows (it picks −log p of each true class instead of multiplying by zeros), in two autograd nodes
instead of five (NllLossBackward0 and LogSoftmaxBackward0). The analytic way keeps the one-hot formula above; its
claim checks that the hand-derived gradient matches autograd's through PyTorch's own cross-entropy. Where the
tutorial wrote `log(softmax(z))`, the code takes `log_softmax(z)`: the same number, but it cannot hit log(0).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from gradlab.kit import autograd_graph
from gradlab.kit.result import Claim, Column, Curve, Result, Table
from gradlab.kit.training import DIVERGED, batches, eager_epoch, graphed_epoch, prepare
from gradlab.kit.training import cross_entropy as cross_entropy  # the one-hot formula: --explain shows it
from gradlab.lessons.mnist.settings import (  # the settings, declared once (no torch: --help reads them)
    VARIANTS,
    Config,
)

# The tutorial's published run on full MNIST (TF-1, shuffled batches): epoch costs and accuracy.
TUTORIAL_COSTS = [1.184285608, 0.665428013, 0.552858426, 0.498728328, 0.465593693,
                  0.442609185, 0.425552949, 0.412188290, 0.401390140, 0.392354651]
TUTORIAL_ACCURACY = 0.873333


# The code `--explain` shows beside the math, read from this file at run time.
EXPLAIN = ("manual_step", "analytic_step", "optimizer_step", "cross_entropy")
EXPLAIN_SHORT = ("manual_step", "analytic_step")  # what --explain prints in full; it names the others


# ---------------------------------------------------------------------------------------------------------------
# The model and the three ways to take one gradient step. Each maker returns step(x, y_onehot) -> cost (before
# the update) and the parameters it updates in place.
# ---------------------------------------------------------------------------------------------------------------

def column_major(W0: torch.Tensor) -> torch.Tensor:
    """A copy of W0 (784×10) laid out in memory as nn.Linear keeps its weight, a class's 784 weights side by side
    (strides (1, 784)). The values and the shape are the tutorial's; only the memory order differs, and with it the
    speed: MKL computes x W and the gradient's xᵀ d about twice as fast this way round for these shapes (10 columns),
    and autograd gives W's gradient W's own layout."""
    return torch.empty_strided(W0.shape, (1, W0.shape[0]), dtype=W0.dtype, device=W0.device).copy_(W0)


def optimizer_step(W0: torch.Tensor, b0: torch.Tensor, lr: float):
    """The library way: SGD's zero_grad / backward / step (TF: GradientDescentOptimizer(lr).minimize(cost))."""
    W, b = torch.nn.Parameter(column_major(W0)), torch.nn.Parameter(b0.clone())
    opt = torch.optim.SGD([W, b], lr=lr, foreach=False)  # two small tensors: the plain per-tensor loop is fastest

    def step(x, t):  # t: the labels (or one-hot rows: F.cross_entropy takes both)
        cost = F.cross_entropy(torch.addmm(b, x, W), t)  # z = xW + b in one call; cost = mean_i(−log p_i,t_i)
        opt.zero_grad()
        cost.backward()  # fills W.grad, b.grad
        opt.step()  # W ← W − lr·W.grad
        return cost.detach()

    return step, (W, b)


def manual_step(W0: torch.Tensor, b0: torch.Tensor, lr: float):
    """The tf.gradients way: ask autograd for the gradients, then update the tensors yourself."""
    W, b = column_major(W0).requires_grad_(True), b0.clone().requires_grad_(True)

    def step(x, t):
        cost = F.cross_entropy(torch.addmm(b, x, W), t)  # z = xW + b; cost = mean_i(−log p_i,t_i)
        gW, gb = torch.autograd.grad(cost, [W, b])  # grad_W, grad_b = tf.gradients(xs=[W, b], ys=cost)
        with torch.no_grad():  # the update itself must not be recorded by autograd
            W.sub_(lr * gW)  # W.assign(W - lr * grad_W)
            b.sub_(lr * gb)  # b.assign(b - lr * grad_b)
        return cost.detach()

    return step, (W, b)


def graphs(config: Config, pixels: int = 3, classes: int = 2, images: int = 2) -> list[autograd_graph.Graph]:
    """The cost's backward graph on a tiny input (seeded random pixels and weights), small enough to read every
    number: the same line as optimizer_step's, with ∂cost/∂W = xᵀ(p − y)/B arriving at W."""
    g = torch.Generator().manual_seed(config.seed)
    x = torch.rand(images, pixels, generator=g)
    t = torch.randint(classes, (images,), generator=g)
    W = (0.5 * torch.randn(pixels, classes, generator=g)).requires_grad_(True)
    b = torch.zeros(classes, requires_grad=True)
    with autograd_graph.record():
        cost = F.cross_entropy(torch.addmm(b, x, W), t)  # z = xW + b; cost = mean_i(−log p_i,t_i)
    return [autograd_graph.trace(cost, title=f"mnist: the cost on {images} random images of {pixels} "
                                             f"pixels, {classes} classes", names={"W": W, "b": b},
                                 note="look at: AddmmBackward0 sends xᵀ∇ to W: ∂cost/∂W = xᵀ(p − y)/B, the gradient "
                                      "the lesson derives by hand")]


def analytic_gradients(x: torch.Tensor, y: torch.Tensor, W: torch.Tensor, b: torch.Tensor):
    """Cost and the hand-derived gradients, no autograd: (cost, ∂cost/∂W, ∂cost/∂b).

    Written with each matrix turned over (zᵀ = Wᵀxᵀ + b, a row per class and a column per image): the same
    formulas, the same numbers up to float rounding, and faster on the CPU for these shapes, where MKL multiplies
    Wᵀxᵀ and (p − y)ᵀx at about twice the speed of xW and xᵀ(p − y), and softmax runs across a class's row of B
    images instead of along an image's 10 classes (measured: bench/bench_mnist.py)."""
    zT = torch.addmm(b[:, None], W.T, x.T)  # zᵀ = Wᵀxᵀ + b, i.e. z = xW + b
    log_pT = F.log_softmax(zT, dim=0)  # each column (image) over its classes
    pT = log_pT.exp()  # pᵀ = softmax(z)ᵀ
    cost = -(y.T * log_pT).sum() / len(x)  # cost = mean_i(−Σ_k y_ik log p_ik)
    dT = (pT - y.T) / len(x)  # (∂cost/∂z)ᵀ = (p − y)ᵀ/B
    gW = (dT @ x).T  # ∂cost/∂W = xᵀ(p − y)/B = ((p − y)ᵀx)ᵀ/B, in column_major's memory order
    return cost, gW, dT.sum(dim=1)  # ∂cost/∂b = mean_i(p − y)


def analytic_step(W0: torch.Tensor, b0: torch.Tensor, lr: float):
    """Gradient descent with the formulas in the module docstring; autograd is switched off."""
    W, b = column_major(W0), b0.clone()

    def step(x, y):
        with torch.no_grad():
            cost, gW, gb = analytic_gradients(x, y, W, b)
            W.sub_(gW, alpha=lr)  # W ← W − lr·∂cost/∂W
            b.sub_(gb, alpha=lr)
        return cost

    return step, (W, b)


STEP_MAKERS = {"optimizer": optimizer_step, "manual": manual_step, "analytic": analytic_step}
ONE_HOT = {"analytic"}  # the variants whose step takes one-hot rows; the others take the labels


def targets(name: str, y: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """What variant NAME's step takes beside x: one-hot rows Y (analytic) or the class numbers LABELS."""
    return y if name in ONE_HOT else labels


# ---------------------------------------------------------------------------------------------------------------
# The training loop: data stays in memory, batches are slices (no shuffle) or gathered rows (shuffle).
# ---------------------------------------------------------------------------------------------------------------

def as_bytes(x: torch.Tensor) -> torch.Tensor | None:
    """X as the bytes its images were read from (uint8, X = bytes / 255 exactly, as gradlab.kit.data makes it), or
    None when a value is not k/255 (pixels made another way). Checked a block of rows at a time."""
    out = torch.empty(x.shape, dtype=torch.uint8, device=x.device)
    for rows, into in zip(x.split(4096), out.split(4096), strict=True):
        into.copy_(rows.mul(255).round_().clamp_(0, 255))
        if not torch.equal(into.to(x.dtype).div_(255.0), rows):
            return None
    return out


def epoch_runner(step: Callable, params: tuple, x: torch.Tensor, y: torch.Tensor, batch_size: int,
                 stored: torch.Tensor | None = None) -> Callable:
    """run(order) -> the epoch's costs. On a GPU each epoch is one CUDA graph (training.graphed_epoch): the same
    steps without a launch per kernel; on the CPU, STEP is called batch after batch. STORED (as_bytes(x)), when
    given, is what a CPU epoch gathers its shuffled batches from: a quarter of the memory to read per batch (the
    gather was a fifth of a step), each batch turned into pixels / 255 as ToTensor and gradlab.kit.data do, so STEP
    gets the very floats x holds."""
    if x.is_cuda:
        return graphed_epoch(step, params, x, y, batch_size)
    if stored is None:
        return eager_epoch(step, x, y, batch_size)
    return lambda order: torch.stack([step(xb.to(x.dtype).div_(255.0), yb)
                                      for xb, yb in batches(stored, y, order, batch_size)])


def train(run_epoch: Callable, orders, on_epoch: Callable[[int, float], None] = lambda e, c: None):
    """Run the epochs; return (epoch costs, (epoch, step, value) of the first non-finite cost or None).

    Like the tutorial, an epoch is n // batch_size full batches; its cost is the mean of their costs. The host reads
    the costs once per epoch, never per step.
    """
    epoch_costs: list[float] = []
    for epoch, order in enumerate(orders, start=1):
        c = run_epoch(order).double()
        bad = (~torch.isfinite(c) | (c > DIVERGED)).nonzero()
        if len(bad):
            s = int(bad[0])
            return epoch_costs, (epoch, s + 1, float(c[s]))
        epoch_costs.append(float(c.mean()))
        on_epoch(epoch, epoch_costs[-1])
    return epoch_costs, None


WARM_UP_STEPS = 5


def warm_up(variants: list[str], W0: torch.Tensor, b0: torch.Tensor, x, y, labels, order, config) -> None:
    """A few untimed steps of every variant on throwaway weights before any timing, so that torch's first-call
    costs (allocations, kernel choice) are not billed to whichever variant happens to run first."""
    for name in variants:
        step, _ = STEP_MAKERS[name](W0, b0, config.lr)
        for xb, yb in itertools.islice(batches(x, targets(name, y, labels), order, config.batch_size), WARM_UP_STEPS):
            step(xb, yb)


def accuracy(W: torch.Tensor, b: torch.Tensor, x: torch.Tensor, labels: torch.Tensor) -> float:
    with torch.no_grad():
        return float(((x @ W + b).argmax(dim=1) == labels).float().mean())


def max_abs_diff(a: tuple, b: tuple) -> float:
    return max(float((u.detach() - v.detach()).abs().max()) for u, v in zip(a, b, strict=True))


def run(config: Config, data, device: torch.device | None = None,
        progress: Callable[[str, int, int], None] = lambda *a: None) -> Result:
    """Train the chosen variant(s) on DATA (gradlab.kit.data.Data) and check the claims. Pure: no printing."""
    device = device or torch.device("cpu")
    torch.manual_seed(config.seed)
    x, y, x_test, labels_test, orders, notes, images = prepare(config, data, device)
    labels = y.argmax(dim=1)  # the class numbers, for the autograd ways' F.cross_entropy
    n_train, n_test = len(x), len(x_test)
    variants = list(VARIANTS) if config.variant == "compare" else [config.variant]
    steps_per_epoch = n_train // config.batch_size
    W0, b0 = torch.zeros(784, 10, device=device), torch.zeros(10, device=device)  # the tutorial's zero init

    warm_up(variants, W0, b0, x, y, labels, orders[0], config)
    stored = None if x.is_cuda else as_bytes(x)  # untimed, like the data's loading
    metrics, params, stopped = {}, {}, None
    total = config.epochs * len(variants)
    for i, name in enumerate(variants):
        step, p = STEP_MAKERS[name](W0, b0, config.lr)
        run_epoch = epoch_runner(step, p, x, targets(name, y, labels), config.batch_size,  # untimed: a GPU's capture
                                 stored)

        def on_epoch(e, c, i=i, name=name):
            progress(f"{name:9s} epoch {e}/{config.epochs}  cost {c:.4f}", i * config.epochs + e, total)

        start = time.perf_counter()
        costs, bad = train(run_epoch, orders, on_epoch)
        wall = time.perf_counter() - start
        params[name] = p
        metrics[name] = {
            "epoch_cost": costs,
            "test_accuracy": accuracy(*p, x_test, labels_test) if bad is None else float("nan"),
            "wall_s": wall,
            "samples_per_s": len(costs) * steps_per_epoch * config.batch_size / wall if costs else 0.0,
        }
        if bad is not None:
            e, s, v = bad
            stopped = (f"{name}: the cost became {v:.4g} at epoch {e}, step {s} of {steps_per_epoch}; training "
                       f"stopped. The learning rate {config.lr} is too large: try a smaller one (lr)")
            break

    claims = compare_claims(config, params, stopped) if config.variant == "compare" else []
    done = [v for v in variants if v in params and metrics[v]["epoch_cost"]]
    # the one-batch checks from the first variant's trained weights, or from the zero init if none finished an epoch
    claims += step_claims(params[done[0]] if done else (W0, b0), x[:config.batch_size], y[:config.batch_size],
                          labels[:config.batch_size],
                          config.lr, "trained weights" if done else "zero init")

    return Result(
        lesson="mnist",
        title="MNIST softmax regression: optimizer step vs hand-written gradient step vs analytic gradient",
        seed=config.seed,
        data=data.info(n_train, n_test, images),
        metrics=metrics,
        claims=claims,
        tables=tables(metrics, variants, config, data.name, graphed=x.is_cuda),
        curves=curves(metrics, config.epochs),
        notes=notes,
        stopped=stopped,
    )


def compare_claims(config: Config, params: dict, stopped: str | None) -> list[Claim]:
    """--variant compare: the three runs end at the same weights (a stopped run shows these too, as not reached:
    NaN fails)."""
    unfinished = "" if stopped is None else " — not reached: training stopped"
    after = f"after {config.epochs} epoch{'s' * (config.epochs > 1)} on the same batches: max |ΔW|, |Δb|"
    return [Claim("manual-equals-optimizer",
                  f"the manual-step run ends at the optimizer run's weights, {after}" + unfinished,
                  max_abs_diff(params["manual"], params["optimizer"]) if not unfinished else math.nan, 1e-6),
            Claim("analytic-equals-autograd",
                  f"the analytic-gradient run (no autograd) ends at the optimizer run's weights, {after}" + unfinished,
                  max_abs_diff(params["analytic"], params["optimizer"]) if not unfinished else math.nan, 1e-5)]


def step_claims(p: tuple, x: torch.Tensor, y: torch.Tensor, labels: torch.Tensor, lr: float,
                at: str = "trained weights") -> list[Claim]:
    """From weights P (described by AT), one step on one batch three ways: the gradients and the updates agree."""
    W, b = (t.detach() for t in p)
    Wg, bg = W.clone().requires_grad_(True), b.clone().requires_grad_(True)
    auto = torch.autograd.grad(F.cross_entropy(x @ Wg + bg, labels), [Wg, bg])  # as the autograd ways compute it
    _, gW, gb = analytic_gradients(x, y, W, b)
    after = {}
    for name, make in STEP_MAKERS.items():
        step, q = make(W, b, lr)
        step(x, targets(name, y, labels))
        after[name] = q
    return [
        Claim("analytic-gradient-one-batch",
              f"∂cost/∂W = xᵀ(p − y)/B and ∂cost/∂b = mean(p − y) match autograd (one batch, {at})",
              max_abs_diff((gW, gb), auto), 1e-6),
        Claim("one-step-agrees",
              f"one step from the {at}: manual and analytic updates ≡ optimizer update "
              "(max |ΔW|, |Δb| relative to max |W|, |b|)",
              max(max_abs_diff(after["manual"], after["optimizer"]),
                  max_abs_diff(after["analytic"], after["optimizer"]))
              / max(1.0, *(float(t.detach().abs().max()) for t in after["optimizer"])), 1e-6),
    ]


def curves(metrics: dict, epochs: int) -> dict[str, Curve]:
    """The cost curves, and how far each variant's cost is from the optimizer's (they overlap on the first)."""
    x = list(range(1, epochs + 1))
    out = {"epoch cost": Curve("epoch", "cost (mean of the epoch's batch costs)", x,
                               {v: m["epoch_cost"] for v, m in metrics.items()})}
    if "optimizer" in metrics and len(metrics) > 1:
        ref = metrics["optimizer"]["epoch_cost"]
        out["|Δ cost| from the optimizer"] = Curve(
            "epoch", "|cost − optimizer's cost| (0 not drawn)", x,
            {v: [abs(c - r) if c != r else float("nan") for c, r in zip(m["epoch_cost"], ref, strict=False)]
             for v, m in metrics.items() if v != "optimizer"}, logy=True)
    return out


def tables(metrics: dict, variants: list[str], config: Config, data_name: str, graphed: bool = False) -> list[Table]:
    ran = variants  # all of them: a stopped run shows what it did not reach
    NOT_REACHED = "not reached"
    tutorial = (data_name == "mnist" and config.epochs == 10 and config.lr == 0.01 and config.batch_size == 100
                and config.train_size == 55000 and config.test_size == 3000)
    cols = [Column(header="epoch"), *(Column(header=h, format=".9f") for h in ran),
            *([Column(header="tutorial (TF-1)", format=".9f")] if tutorial else [])]
    rows = []
    for e in range(config.epochs):
        row = [e + 1] + [metrics[v]["epoch_cost"][e] if v in metrics and e < len(metrics[v]["epoch_cost"])
                         else NOT_REACHED for v in ran]
        rows.append(row + ([TUTORIAL_COSTS[e]] if tutorial else []))
    per_epoch = Table("cost per epoch (mean of its batch costs, each before its update)", cols, rows,
                      note="tutorial (TF-1): its published costs, on the same images (5,000–59,999) in another batch "
                           "order (its shuffle was unseeded)" if tutorial else
                      "the tutorial's published numbers appear beside ours when the data is full MNIST with the "
                      "tutorial's settings")
    summary_rows = [[v, metrics[v]["test_accuracy"], metrics[v]["wall_s"], metrics[v]["samples_per_s"] or None]
                    if v in metrics and metrics[v]["epoch_cost"] else [v, NOT_REACHED, None, None] for v in ran]
    if tutorial:
        summary_rows.append(["tutorial (TF-1)", TUTORIAL_ACCURACY, None, None])
    summary = Table("after training",
                    [Column(header="variant"), Column(header="test accuracy", format=".6f"),
                     Column(header="wall s", format=".3f"), Column(header="samples/s", format=",.0f")],
                    summary_rows,
                    note=f"wall s: the training loop alone, after {WARM_UP_STEPS} untimed warm-up steps of every "
                         f"variant (not data loading, not the accuracy"
                         + ("; on a GPU, not the capture of the epoch's CUDA graph either)" if graphed else ")"))
    return [per_epoch, summary]
