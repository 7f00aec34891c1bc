"""The exercises' inputs, reference answers, known mistakes and harnesses (torch). See gradlab/practice/__init__.py.

A harness calls a function the way the lesson uses it and returns its outputs as tensors. The same harness runs the
student's function (in the sandbox process) and, here in gradlab's process, the reference and every known mistake;
the checker compares them. A known mistake is data: a realistic wrong implementation and what to tell its author.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from gradlab.training import global_norm, torch_clip


@dataclass
class Mistake:
    name: str
    fn: Callable  # a wrong implementation with the student's signature
    diagnosis: Callable[[dict, dict], str]  # (the student's outputs, the reference's) -> what to tell them


@dataclass
class Checks:
    """One exercise's machinery: CASES(seed) -> [{"label", "kind", tensors…}], HARNESS(fn, case) -> {name: tensor or
    [tensors]}, the REFERENCE answer, the MISTAKES, and what each case kind claims (row text, bound)."""

    cases: Callable[[int], list[dict]]
    harness: Callable[[Callable, dict], dict]
    reference: Callable
    mistakes: list[Mistake]
    claims: dict[str, tuple[str, float]]  # case kind -> (the claim, its bound on the relative difference)
    extra: Callable[[list[dict], list[dict]], list[tuple[str, float, float, str]]] = field(
        default=lambda outs, cases: [])  # further claims on the student's outputs: (text, measured, bound, op)


def tensors(out) -> list[torch.Tensor]:
    """Every tensor of an output, in order."""
    items = out.values() if isinstance(out, dict) else out
    flat = []
    for v in items:
        flat += tensors(v) if isinstance(v, dict | list | tuple) else [v]
    return flat


def relative(a: dict, b: dict) -> float:
    """max |a − b| / max(1, max |b|) over every tensor; inf when the shapes differ or a is not finite."""
    xs, ys = tensors(a), tensors(b)
    if len(xs) != len(ys) or any(x.shape != y.shape for x, y in zip(xs, ys, strict=True)):
        return math.inf
    worst = 0.0
    for x, y in zip(xs, ys, strict=True):
        if not torch.isfinite(x).all():
            return math.inf
        scale = max(1.0, float(y.abs().max())) if y.numel() else 1.0
        worst = max(worst, float((x.double() - y.double()).abs().max()) / scale if x.numel() else 0.0)
    return worst


def same(a: dict, b: dict, tolerance: float = 1e-5) -> bool:
    """Whether two outputs agree tensor by tensor, NaN where NaN: how a submission is matched to a known mistake."""
    xs, ys = tensors(a), tensors(b)
    return len(xs) == len(ys) and all(
        x.shape == y.shape and torch.allclose(x.double(), y.double(), rtol=tolerance, atol=tolerance * 1e-2,
                                              equal_nan=True) for x, y in zip(xs, ys, strict=True))


def norm_ratio(a: dict, b: dict) -> float:
    return float(global_norm(tensors(a)) / max(float(global_norm(tensors(b))), 1e-30))


# -------------------------------------------------------------------------------------------------- mnist.sgd_step

def _sgd_reference(W, b, x, y, lr):
    """torch.optim.SGD's step from the same weights: the lesson's claim is that the hand-written step equals it."""
    Wp, bp = torch.nn.Parameter(W.detach().clone()), torch.nn.Parameter(b.detach().clone())
    opt = torch.optim.SGD([Wp, bp], lr=lr)
    opt.zero_grad()
    (-(y * F.log_softmax(x @ Wp + bp, dim=1)).sum(dim=1).mean()).backward()
    opt.step()
    return Wp.detach(), bp.detach()


def _sgd_uphill(W, b, x, y, lr):
    gW, gb = torch.autograd.grad(-(y * F.log_softmax(x @ W + b, dim=1)).sum(dim=1).mean(), [W, b])
    return (W + lr * gW).detach(), (b + lr * gb).detach()


def _sgd_summed(W, b, x, y, lr):
    gW, gb = torch.autograd.grad(-(y * F.log_softmax(x @ W + b, dim=1)).sum(), [W, b])
    return (W - lr * gW).detach(), (b - lr * gb).detach()


def _sgd_b_forgotten(W, b, x, y, lr):
    gW, _ = torch.autograd.grad(-(y * F.log_softmax(x @ W + b, dim=1)).sum(dim=1).mean(), [W, b])
    return (W - lr * gW).detach(), b.detach().clone()


def _sgd_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for label, batch, scale, lr in (("batch of 100", 100, 0.01, 0.5), ("one sample", 1, 0.01, 0.5),
                                    ("zero init (the tutorial's)", 50, 0.0, 0.01), ("lr = 0", 20, 0.01, 0.0),
                                    ("large weights", 30, 1.0, 0.1)):
        x = torch.rand(batch, 784, generator=g)
        y = F.one_hot(torch.randint(0, 10, (batch,), generator=g), 10).float()
        out.append({"label": label, "kind": "step", "W": torch.randn(784, 10, generator=g) * scale,
                    "b": torch.randn(10, generator=g) * scale, "x": x, "y": y, "lr": lr})
    # float64: free-running float32 runs that add in a different order drift apart over the steps (gradlab ddp)
    xs = torch.rand(20, 50, 784, generator=g, dtype=torch.float64)
    ys = F.one_hot(torch.randint(0, 10, (20, 50), generator=g), 10).double()
    out.append({"label": "20 steps of training from zero (float64)", "kind": "train",
                "W": torch.zeros(784, 10, dtype=torch.float64), "b": torch.zeros(10, dtype=torch.float64),
                "xs": xs, "ys": ys, "lr": 0.5})
    return out


def _sgd_harness(fn: Callable, case: dict) -> dict:
    W, b = case["W"].clone(), case["b"].clone()
    batches = [(case["x"], case["y"])] if case["kind"] == "step" else list(zip(case["xs"], case["ys"], strict=True))
    for x, y in batches:
        got = fn(W.clone().requires_grad_(True), b.clone().requires_grad_(True), x, y, case["lr"])
        W, b = (t.detach() for t in got)
    return {"W": W, "b": b}


SGD = Checks(
    cases=_sgd_cases, harness=_sgd_harness, reference=_sgd_reference,
    mistakes=[
        Mistake("uphill", _sgd_uphill, lambda s, r: "your step goes uphill: the cost rises. Gradient descent moves "
                "against the gradient: W − lr·g, not W + lr·g"),
        Mistake("summed cost", _sgd_summed, lambda s, r: "your step is B times too large: the cost is the mean over "
                "the batch (.mean() of the per-sample costs), not their sum"),
        Mistake("b forgotten", _sgd_b_forgotten, lambda s, r: "b did not move: take its gradient too and return "
                "b − lr·∂cost/∂b"),
    ],
    claims={"step": ("your step ≡ torch.optim.SGD's step from the same weights (max relative |Δ| over the inputs)",
                     1e-5),
            "train": ("20 training steps with your step ≡ with torch.optim.SGD (max relative |Δ| of W, b)", 1e-5)})


# ----------------------------------------------------------------------------------------- clip.clip_by_global_norm

def _clip_reference(grads, clip_norm):
    return torch_clip([g.detach() for g in grads], clip_norm)[1]  # torch.nn.utils.clip_grad_norm_


def _clip_each(grads, clip_norm):
    return [g * clip_norm / max(float(g.norm()), clip_norm) for g in grads]


def _clip_always(grads, clip_norm):
    norm = float(torch.sqrt(sum((g * g).sum() for g in grads)))
    return [g * clip_norm / norm for g in grads]


def _clip_values(grads, clip_norm):
    return [g.clamp(-clip_norm, clip_norm) for g in grads]


def _clip_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    shapes = [(784, 10), (10,), (256, 256), (3,)]
    out = []
    for label, n, scale, clip in (("norm above the cap", 3, 1.0, 1.0), ("norm below the cap: unchanged", 2, 1e-3, 1.0),
                                  ("one tensor", 1, 5.0, 0.5), ("zero gradients", 2, 0.0, 1.0),
                                  ("four tensors, a small cap", 4, 0.1, 1e-3)):
        out.append({"label": label, "kind": "clip", "clip_norm": clip,
                    "grads": [torch.randn(*shapes[i], generator=g) * scale * (i + 1) for i in range(n)]})
    return out


def _clip_harness(fn: Callable, case: dict) -> dict:
    return {"grads": [t.detach() for t in fn([g.clone() for g in case["grads"]], case["clip_norm"])]}


def _clip_extra(outs: list[dict], cases: list[dict]) -> list[tuple[str, float, float, str]]:
    over = max(float(global_norm(o["grads"])) / c["clip_norm"] for o, c in zip(outs, cases, strict=True))
    cosines = [float(torch.nn.functional.cosine_similarity(torch.cat([t.reshape(-1) for t in o["grads"]]),
                                                           torch.cat([t.reshape(-1) for t in c["grads"]]), dim=0))
               for o, c in zip(outs, cases, strict=True) if float(global_norm(c["grads"])) > 0]
    return [("after your clipping the global norm is at most clip_norm (max of norm / clip_norm)", over,
             1 + 1e-5, "<="),
            ("the direction is kept: cosine between clipped and original gradients (min)", min(cosines),
             1 - 1e-6, ">=")]


CLIP = Checks(
    cases=_clip_cases, harness=_clip_harness, reference=_clip_reference,
    mistakes=[
        Mistake("per tensor", _clip_each, lambda s, r: "you clipped each tensor by its own norm (tf.clip_by_norm): "
                "the global norm takes every tensor together, sqrt(Σ_i ‖g_i‖²), and one scale serves them all"),
        Mistake("always rescaled", _clip_always, lambda s, r: "you rescaled the gradients to the cap even when their "
                "norm was below it (and 0/0 on zero gradients): divide by max(global_norm, clip_norm)"),
        Mistake("by value", _clip_values, lambda s, r: "you clipped each element to ±clip_norm (tf.clip_by_value): "
                "that changes the direction; scale all gradients by one factor instead"),
    ],
    claims={"clip": ("your clipped gradients ≡ torch.nn.utils.clip_grad_norm_'s (max relative |Δ| over the inputs)",
                     1e-5)},
    extra=_clip_extra)


# ------------------------------------------------------------------------------------------ ddp.accumulated_grad

def _model(case: dict) -> torch.nn.Module:
    model = torch.nn.Sequential(torch.nn.Linear(784, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10))
    with torch.no_grad():
        for p, w in zip(model.parameters(), case["weights"], strict=True):
            p.copy_(w)
    return model


def _acc_reference(model, x, y, sizes):
    model.zero_grad()
    B = len(x)
    for xk, yk in zip(x.split(sizes), y.split(sizes), strict=True):
        (F.cross_entropy(model(xk), yk, reduction="sum") / B).backward()  # Σ_i ℓ_i / B: any sizes
    return [p.grad for p in model.parameters()]


def _acc_no_k(model, x, y, sizes):
    model.zero_grad()
    for xk, yk in zip(x.split(sizes), y.split(sizes), strict=True):
        F.cross_entropy(model(xk), yk).backward()
    return [p.grad for p in model.parameters()]


def _acc_mean_of_means(model, x, y, sizes):
    model.zero_grad()
    for xk, yk in zip(x.split(sizes), y.split(sizes), strict=True):
        (F.cross_entropy(model(xk), yk) / len(sizes)).backward()
    return [p.grad for p in model.parameters()]


def _acc_no_zero_grad(model, x, y, sizes):
    for xk, yk in zip(x.split(sizes), y.split(sizes), strict=True):
        (F.cross_entropy(model(xk), yk, reduction="sum") / len(x)).backward()
    return [p.grad for p in model.parameters()]


def _acc_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for label, kind, sizes in (("4 equal parts of 25", "equal", [25, 25, 25, 25]),
                               ("2 equal parts of 50", "equal", [50, 50]), ("one part", "equal", [100]),
                               ("unequal parts 64/32/4", "unequal", [64, 32, 4]),
                               ("unequal parts 1/99", "unequal", [1, 99])):
        torch.manual_seed(seed)
        base = torch.nn.Sequential(torch.nn.Linear(784, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10))
        weights = [p.detach().clone() for p in base.parameters()]
        out.append({"label": label, "kind": kind, "sizes": sizes, "weights": weights,
                    "x": torch.rand(100, 784, generator=g), "y": torch.randint(0, 10, (100,), generator=g),
                    "stale": [torch.randn(w.shape, generator=g) for w in weights]})  # what .grad holds on entry
    return out


def _acc_harness(fn: Callable, case: dict) -> dict:
    model = _model(case)
    for p, stale in zip(model.parameters(), case["stale"], strict=True):
        p.grad = stale.clone()
    grads = fn(model, case["x"], case["y"], list(case["sizes"]))
    return {"grads": [t.detach().clone() for t in grads]}


ACCUMULATE = Checks(
    cases=_acc_cases, harness=_acc_harness, reference=_acc_reference,
    mistakes=[
        Mistake("/K forgotten", _acc_no_k, lambda s, r: f"your gradient is {norm_ratio(s, r):.3g} times the full "
                f"batch's (K times, for K equal parts): .backward() adds the K gradients, so divide each "
                f"micro-batch's loss by K, or sum the per-sample losses and divide by B"),
        Mistake("mean of means", _acc_mean_of_means, lambda s, r: "right for equal parts, wrong for unequal ones: "
                "each micro-batch's loss was normalised by its own size and then by K, so 4 samples weigh as much "
                "as 64. Sum the per-sample losses (reduction='sum') and divide by B, the whole batch's size"),
        Mistake("no zero_grad", _acc_no_zero_grad, lambda s, r: "your gradients piled up on what .grad held "
                "before: call model.zero_grad() (or set each .grad to None) before the first backward"),
    ],
    claims={"equal": ("equal parts: your accumulated gradient ≡ one backward over the whole batch (max relative |Δ|)",
                      1e-5),
            "unequal": ("unequal parts: your accumulated gradient ≡ one backward over the whole batch (max relative "
                        "|Δ|)", 1e-5)})


CHECKS: dict[str, Checks] = {"mnist.sgd_step": SGD, "clip.clip_by_global_norm": CLIP,
                             "ddp.accumulated_grad": ACCUMULATE}
