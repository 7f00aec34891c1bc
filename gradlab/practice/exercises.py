"""The exercises' inputs, reference answers, known mistakes and harnesses (torch). See gradlab/practice/__init__.py.

A harness calls a function the way the lesson uses it and returns its outputs as tensors. The same harness runs the
student's function (in the sandbox process) and, here in gradlab's process, the reference and every known mistake;
the checker compares them. A known mistake is data: a realistic wrong implementation and what to tell its author.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from gradlab.training import cross_entropy, global_norm, torch_clip


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
    cross_entropy(x @ Wp + bp, y).backward()
    opt.step()
    return Wp.detach(), bp.detach()


def _sgd_uphill(W, b, x, y, lr):
    gW, gb = torch.autograd.grad(cross_entropy(x @ W + b, y), [W, b])
    return (W + lr * gW).detach(), (b + lr * gb).detach()


def _sgd_summed(W, b, x, y, lr):
    gW, gb = torch.autograd.grad(-(y * F.log_softmax(x @ W + b, dim=1)).sum(), [W, b])
    return (W - lr * gW).detach(), (b - lr * gb).detach()


def _sgd_b_forgotten(W, b, x, y, lr):
    gW, _ = torch.autograd.grad(cross_entropy(x @ W + b, y), [W, b])
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

def _loaded(net: torch.nn.Module, weights: list[torch.Tensor]) -> torch.nn.Module:
    """NET with its parameters set to WEIGHTS (a case carries tensors, not modules)."""
    with torch.no_grad():
        for p, w in zip(net.parameters(), weights, strict=True):
            p.copy_(w)
    return net


def _model(case: dict) -> torch.nn.Module:
    return _loaded(torch.nn.Sequential(torch.nn.Linear(784, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10)),
                   case["weights"])


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
    torch.manual_seed(seed)  # PyTorch's default init, as a model of the lesson starts
    weights = [p.detach().clone() for p in torch.nn.Sequential(torch.nn.Linear(784, 16), torch.nn.ReLU(),
                                                               torch.nn.Linear(16, 10)).parameters()]
    out = []
    for label, kind, sizes in (("4 equal parts of 25", "equal", [25, 25, 25, 25]),
                               ("2 equal parts of 50", "equal", [50, 50]), ("one part", "equal", [100]),
                               ("unequal parts 64/32/4", "unequal", [64, 32, 4]),
                               ("unequal parts 1/99", "unequal", [1, 99])):
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


# --------------------------------------------------------------------------------------------- mnist.softmax_grad

def _grad_reference(W, b, x, y):
    """autograd's gradient of the same cost: the lesson's claim is that the hand-derived one equals it."""
    Wg, bg = W.detach().clone().requires_grad_(True), b.detach().clone().requires_grad_(True)
    return torch.autograd.grad(cross_entropy(x @ Wg + bg, y), [Wg, bg])


def _grad_no_b(W, b, x, y):
    d = torch.softmax(x @ W + b, dim=1) - y
    return x.T @ d, d.mean(dim=0)


def _grad_uphill(W, b, x, y):
    d = (y - torch.softmax(x @ W + b, dim=1)) / len(x)
    return x.T @ d, d.sum(dim=0)


def _grad_b_summed(W, b, x, y):
    d = torch.softmax(x @ W + b, dim=1) - y
    return x.T @ d / len(x), d.sum(dim=0)


def _grad_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for label, batch, scale, dtype in (("batch of 100", 100, 0.01, torch.float32), ("one sample", 1, 0.01,
                                       torch.float32), ("zero weights", 50, 0.0, torch.float32),
                                       ("large weights: a saturated softmax", 30, 3.0, torch.float64),
                                       ("float64", 64, 0.1, torch.float64)):
        out.append({"label": label, "kind": "grad", "W": torch.randn(784, 10, generator=g, dtype=dtype) * scale,
                    "b": torch.randn(10, generator=g, dtype=dtype) * scale,
                    "x": torch.rand(batch, 784, generator=g, dtype=dtype),
                    "y": F.one_hot(torch.randint(0, 10, (batch,), generator=g), 10).to(dtype)})
    return out


def _grad_harness(fn: Callable, case: dict) -> dict:
    gW, gb = fn(case["W"].clone(), case["b"].clone(), case["x"], case["y"])
    return {"gW": gW.detach(), "gb": gb.detach()}


GRAD = Checks(
    cases=_grad_cases, harness=_grad_harness, reference=_grad_reference,
    mistakes=[
        Mistake("/B forgotten", _grad_no_b, lambda s, r: "your gradient is B times too large: the cost is a mean "
                "over the batch, so ∂cost/∂z = (p − y)/B"),
        Mistake("sign", _grad_uphill, lambda s, r: "your gradient has the wrong sign: ∂cost/∂z = p − y (the "
                "prediction minus the label), not y − p"),
        Mistake("∂b summed", _grad_b_summed, lambda s, r: "∂cost/∂W is right but ∂cost/∂b is B times too large: "
                "it is the mean of (p − y) over the batch, not its sum"),
    ],
    claims={"grad": ("your hand-derived gradient ≡ autograd's (max relative |Δ| over the inputs)", 1e-5)})


# ----------------------------------------------------------------------------------------- jacobian.jacobian_loop

def _jac_f(case: dict) -> Callable:
    A = case["A"]
    return lambda v: torch.tanh(A @ v)


def _jac_reference(f, x):
    return torch.autograd.functional.jacobian(f, x)


def _jac_summed(f, x):
    x = x.detach().clone().requires_grad_(True)
    y = f(x)
    g, = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y))
    return g.expand(len(y), len(x)).clone()


def _jac_transposed(f, x):
    return torch.autograd.functional.jacobian(f, x).T.contiguous()


def _jac_piled(f, x):
    x = x.detach().clone().requires_grad_(True)
    y = f(x)
    rows = []
    for i in range(len(y)):
        y[i].backward(retain_graph=True)  # adds into x.grad: row i = Σ_{k ≤ i} ∂f_k/∂x
        rows.append(x.grad.clone())
    return torch.stack(rows)


def _jac_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    return [{"label": label, "kind": "jacobian", "A": torch.randn(m, n, generator=g, dtype=torch.float64),
             "x": torch.randn(n, generator=g, dtype=torch.float64)}
            for label, m, n in (("3 outputs, 4 inputs", 3, 4), ("one output", 1, 5), ("6 outputs, 2 inputs", 6, 2),
                                ("square 8 × 8", 8, 8))]


def _jac_harness(fn: Callable, case: dict) -> dict:
    return {"J": fn(_jac_f(case), case["x"].clone()).detach()}


JACOBIAN = Checks(
    cases=_jac_cases, harness=_jac_harness, reference=_jac_reference,
    mistakes=[
        Mistake("rows summed", _jac_summed, lambda s, r: "every row is Σ_i ∂f_i/∂x: that is what tf.gradients (and "
                "grad_outputs = ones) returns for a non-scalar output. Take one output at a time: row i = "
                "autograd.grad(f(x)[i], x)"),
        Mistake("transposed", _jac_transposed, lambda s, r: "your Jacobian is transposed: J[i, j] = ∂f_i/∂x_j has one "
                "row per output (m × n)"),
        Mistake("rows piled up", _jac_piled, lambda s, r: "each row adds the ones before it: .backward() adds into "
                "x.grad. Use torch.autograd.grad (it returns a fresh gradient) or zero x.grad between rows"),
    ],
    claims={"jacobian": ("your Jacobian ≡ torch.autograd.functional.jacobian's (max relative |Δ|)", 1e-9)})


# -------------------------------------------------------------------------------------------- log1pexp.Log1pExp

class _StableLog1pExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, dy):
        x, = ctx.saved_tensors
        return dy * torch.sigmoid(x)  # differentiable in x: the second derivative is right


class _NaiveLog1pExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log(1 + torch.exp(x))

    @staticmethod
    def backward(ctx, dy):
        x, = ctx.saved_tensors
        return dy * torch.exp(x) / (1 + torch.exp(x))


class _TutorialLog1pExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        e = torch.exp(x)
        ctx.e = e  # a plain tensor to autograd: the backward below is not differentiable in x
        return torch.log(1 + e)

    @staticmethod
    def backward(ctx, dy):
        return dy * (1 - 1 / (1 + ctx.e))


class _StableForwardExpBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, dy):
        x, = ctx.saved_tensors
        return dy * torch.exp(x) / (1 + torch.exp(x))


POINTS = [-100.0, -20.0, 0.0, 20.0, 88.0, 89.0, 100.0, 1000.0]


def _lpe_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    return [{"label": "x = −100 … 1000, float32", "kind": "float32", "x": torch.tensor(POINTS)},
            {"label": "x = −100 … 1000, float64", "kind": "float64", "x": torch.tensor(POINTS, dtype=torch.float64)},
            {"label": "random x, float64", "kind": "float64", "x": torch.randn(50, generator=g, dtype=torch.float64)
             * 10}]


def _lpe_harness(cls, case: dict) -> dict:
    x = case["x"].clone().requires_grad_(True)
    y = cls.apply(x)
    g, = torch.autograd.grad(y.sum(), x, create_graph=True)
    gg = torch.autograd.grad(g.sum(), x, allow_unused=True)[0] if g.requires_grad else None
    return {"value": y.detach(), "gradient": g.detach(), "second": gg.detach() if gg is not None
            else torch.zeros_like(x.detach())}


def _lpe_extra(outs: list[dict], cases: list[dict]) -> list[tuple[str, float, float, str]]:
    at = POINTS.index(100.0)
    bad = sum(int(not math.isfinite(float(o[k][at]))) for o, c in zip(outs, cases, strict=True)
              if c["kind"] == "float32" for k in ("value", "gradient"))
    return [("no NaN or inf at x = 100 in float32 (value and gradient; count)", bad, 0, "<=")]


LOG1PEXP = Checks(
    cases=_lpe_cases, harness=_lpe_harness, reference=_StableLog1pExp,
    mistakes=[
        Mistake("naive", _NaiveLog1pExp, lambda s, r: "log(1 + eˣ) as written overflows: in float32 eˣ is inf "
                "from x ≈ 88.7, so the value is inf and the gradient inf/inf = NaN. Compute max(x, 0) + "
                "log1p(exp(−|x|)), and the gradient as torch.sigmoid(x)"),
        Mistake("tutorial's", _TutorialLog1pExp, lambda s, r: "the tutorial's version: the gradient is finite, but "
                "the value is still log(1 + inf) = inf, and the backward uses the saved e, a constant to autograd, "
                "so the second derivative comes out 0. Compute the value stably and the backward from x with "
                "differentiable ops (dy · torch.sigmoid(x))"),
        Mistake("exp in the backward", _StableForwardExpBackward, lambda s, r: "the value is right, but the "
                "backward's eˣ/(1 + eˣ) is inf/inf = NaN once eˣ overflows: use torch.sigmoid(x)"),
    ],
    claims={"float32": ("float32: your value, gradient and second derivative ≡ the stable reference (max relative "
                        "|Δ|)", 1e-6),
            "float64": ("float64: your value, gradient and second derivative ≡ the stable reference (max relative "
                        "|Δ|)", 1e-12)},
    extra=_lpe_extra)


# -------------------------------------------------------------------------------------------- gaussian-policy.score

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


def _score_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for label, n, spread in (("two dimensions", 2, 1.0), ("a batch of 64", 64, 1.0), ("small σ", 8, 0.01),
                             ("large σ", 8, 10.0)):
        mu = torch.randn(n, generator=g, dtype=torch.float64)
        sigma = (torch.rand(n, generator=g, dtype=torch.float64) + 0.5) * spread
        out.append({"label": label, "kind": "score", "mu": mu, "sigma": sigma,
                    "a": mu + sigma * torch.randn(n, generator=g, dtype=torch.float64)})
    mu = torch.zeros(3, dtype=torch.float64)
    out.append({"label": "a = μ", "kind": "score", "mu": mu, "sigma": torch.ones(3, dtype=torch.float64),
                "a": mu.clone()})
    return out


def _score_harness(fn: Callable, case: dict) -> dict:
    d_mu, d_sigma = fn(case["a"].clone(), case["mu"].clone(), case["sigma"].clone())
    return {"d_mu": d_mu.detach(), "d_sigma": d_sigma.detach()}


SCORE = Checks(
    cases=_score_cases, harness=_score_harness, reference=_score_reference,
    mistakes=[
        Mistake("−1/σ missing", _score_no_log_sigma, lambda s, r: "∂ln π/∂σ misses −1/σ: ln π has the term −ln σ "
                "(from the normalisation), so ∂ln π/∂σ = ((a − μ)² − σ²)/σ³"),
        Mistake("∂/∂σ²", _score_variance, lambda s, r: "your second output is the derivative with respect to the "
                "variance σ², not to σ: multiply by ∂σ²/∂σ = 2σ"),
        Mistake("sign", _score_sign, lambda s, r: "∂ln π/∂μ has the wrong sign: it is (a − μ)/σ², pointing from μ "
                "towards the action"),
    ],
    claims={"score": ("your closed forms ≡ autograd through Normal(μ, σ).log_prob(a) (max relative |Δ|)", 1e-9)})


# ------------------------------------------------------------------------------------------------------ dqn.td_loss

def _qnet(weights: list[torch.Tensor]) -> torch.nn.Module:
    return _loaded(torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)), weights)


def _td_target(target, r, s2, done, gamma):
    return r + gamma * (1 - done) * target(s2).max(dim=1).values


def _td_reference(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = _td_target(target, r, s2, done, gamma)
    q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
    return F.smooth_l1_loss(q, y)


def _td_no_stop(online, target, s, a, r, s2, done, gamma):
    y = _td_target(target, r, s2, done, gamma)
    y.detach()  # the result is thrown away: y is still in the graph
    return F.smooth_l1_loss(online(s).gather(1, a.unsqueeze(1)).squeeze(1), y)


def _td_no_done(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = r + gamma * target(s2).max(dim=1).values
    return F.smooth_l1_loss(online(s).gather(1, a.unsqueeze(1)).squeeze(1), y)


def _td_online_target(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = _td_target(online, r, s2, done, gamma)
    return F.smooth_l1_loss(online(s).gather(1, a.unsqueeze(1)).squeeze(1), y)


def _td_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)

    def weights():
        torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=g)))
        return [p.detach().clone() for p in torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(),
                                                                torch.nn.Linear(16, 2)).parameters()]

    out = []
    for label, n, p_done, gamma in (("32 transitions, some terminal", 32, 0.3, 0.99),
                                    ("every transition terminal", 16, 1.0, 0.99), ("none terminal", 16, 0.0, 0.99),
                                    ("γ = 0", 8, 0.5, 0.0), ("one transition", 1, 0.0, 0.9)):
        out.append({"label": label, "kind": "td", "online": weights(), "target": weights(), "gamma": gamma,
                    "s": torch.randn(n, 4, generator=g), "s2": torch.randn(n, 4, generator=g),
                    "a": torch.randint(0, 2, (n,), generator=g), "r": torch.randint(0, 2, (n,), generator=g).float(),
                    "done": (torch.rand(n, generator=g) < p_done).float()})
    return out


def _td_harness(fn: Callable, case: dict) -> dict:
    online, target = _qnet(case["online"]), _qnet(case["target"])
    loss = fn(online, target, case["s"], case["a"], case["r"], case["s2"], case["done"], case["gamma"])
    params = [*online.parameters(), *target.parameters()]
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    grads = [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads, strict=True)]
    k = len(list(online.parameters()))
    return {"loss": loss.detach().reshape(()), "online": grads[:k], "target": grads[k:]}


def _td_extra(outs: list[dict], cases: list[dict]) -> list[tuple[str, float, float, str]]:
    leak = max(float(global_norm(o["target"])) for o in outs)
    return [("no gradient reaches the target network (largest norm of its gradient)", leak, 0.0, "<=")]


TD = Checks(
    cases=_td_cases, harness=_td_harness, reference=_td_reference,
    mistakes=[
        Mistake("no stop-gradient", _td_no_stop, lambda s, r: "gradient reaches the target network: y must be a "
                "number to move towards. Compute it under torch.no_grad(), or write y = y.detach() (y.detach() alone "
                "returns a new tensor and leaves y in the graph)"),
        Mistake("done ignored", _td_no_done, lambda s, r: "terminal transitions bootstrap from the next state: "
                "multiply γ · max target(s2) by (1 − done), there is no next state after the end"),
        Mistake("online target", _td_online_target, lambda s, r: "the target comes from the online network: use the "
                "target network, target(s2), which is what stabilises DQN"),
    ],
    claims={"td": ("your loss and its gradients ≡ the stop-gradient TD loss's (max relative |Δ|)", 1e-5)},
    extra=_td_extra)


# -------------------------------------------------------------------------------------- actor-critic.critic_update

def _critic(weights: list[torch.Tensor]) -> torch.nn.Module:
    return _loaded(torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)), weights)


def _critic_loss(critic, s, r, s2, done, gamma, cut: bool = True):
    """mean (target − V(s))², the target r + γ(1 − done)V(s2) cut from the graph (CUT False: the residual gradient)."""
    with torch.no_grad() if cut else contextlib.nullcontext():
        target = r + gamma * (1 - done) * critic(s2).squeeze(1)
    return ((target - critic(s).squeeze(1)) ** 2).mean()


def _critic_step(critic, optimizer, loss, put) -> None:
    """The explicit-gradient update: autograd.grad, PUT(p, g) into .grad, then the optimizer's step."""
    for p, g in zip(critic.parameters(), torch.autograd.grad(loss, list(critic.parameters())), strict=True):
        put(p, g)
    optimizer.step()


def _critic_reference(critic, optimizer, s, r, s2, done, gamma):
    _critic_step(critic, optimizer, _critic_loss(critic, s, r, s2, done, gamma), lambda p, g: setattr(p, "grad", g))


def _critic_residual(critic, optimizer, s, r, s2, done, gamma):
    _critic_step(critic, optimizer, _critic_loss(critic, s, r, s2, done, gamma, cut=False),
                 lambda p, g: setattr(p, "grad", g))


def _critic_added(critic, optimizer, s, r, s2, done, gamma):
    _critic_step(critic, optimizer, _critic_loss(critic, s, r, s2, done, gamma),
                 lambda p, g: setattr(p, "grad", g if p.grad is None else p.grad + g))


def _critic_uphill(critic, optimizer, s, r, s2, done, gamma):
    _critic_step(critic, optimizer, _critic_loss(critic, s, r, s2, done, gamma), lambda p, g: setattr(p, "grad", -g))


def _critic_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    weights = [torch.randn(shape, generator=g) * 0.3 for shape in ((16, 4), (16,), (1, 16), (1,))]
    out = []
    for label, n, p_done in (("3 updates of 32 transitions", 32, 0.2), ("3 updates, all terminal", 8, 1.0),
                             ("3 updates of one transition", 1, 0.0)):
        out.append({"label": label, "kind": "critic", "weights": weights, "gamma": 0.99,
                    "stale": [torch.randn(w.shape, generator=g) for w in weights],
                    "s": torch.randn(3, n, 4, generator=g), "s2": torch.randn(3, n, 4, generator=g),
                    "r": torch.ones(3, n), "done": (torch.rand(3, n, generator=g) < p_done).float()})
    return out


def _critic_harness(fn: Callable, case: dict) -> dict:
    critic = _critic(case["weights"])
    optimizer = torch.optim.RMSprop(critic.parameters(), lr=0.01, alpha=0.99, eps=1e-5)
    for p, stale in zip(critic.parameters(), case["stale"], strict=True):
        p.grad = stale.clone()  # what .grad holds from the last update
    for k in range(3):
        fn(critic, optimizer, case["s"][k], case["r"][k], case["s2"][k], case["done"][k], case["gamma"])
    return {"params": [p.detach().clone() for p in critic.parameters()]}


CRITIC = Checks(
    cases=_critic_cases, harness=_critic_harness, reference=_critic_reference,
    mistakes=[
        Mistake("residual gradient", _critic_residual, lambda s, r: "the bootstrap V(s2) was differentiated too (the "
                "residual gradient): compute the target under torch.no_grad(), it is a number to move towards"),
        Mistake(".grad added to", _critic_added, lambda s, r: "you added the new gradient to .grad, which still held "
                "the last one: assign p.grad = g (torch.autograd.grad returns fresh gradients)"),
        Mistake("uphill", _critic_uphill, lambda s, r: "your update goes uphill: put the gradient itself in .grad; "
                "the optimizer subtracts it"),
    ],
    claims={"critic": ("3 updates with your function ≡ with the explicit-gradient RMSprop update (max relative |Δ| "
                       "of the parameters)", 1e-5)})


# ------------------------------------------------------------------------------------------- ddp.average_gradients

def _avg_reference(grads, n_local, n_total):
    import torch.distributed as dist

    out = [g * (n_local / n_total) for g in grads]  # (n_r / B) · ḡ_r, then the sum over the workers
    for t in out:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return out


def _avg_equal_weights(grads, n_local, n_total):
    import torch.distributed as dist

    out = [g.clone() for g in grads]
    for t in out:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return [t / dist.get_world_size() for t in out]


def _avg_local(grads, n_local, n_total):
    return [g.clone() for g in grads]


def _avg_summed(grads, n_local, n_total):
    import torch.distributed as dist

    out = [g.clone() for g in grads]
    for t in out:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return out


def _avg_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for label, sizes in (("3 workers, shards 34/33/33", [34, 33, 33]), ("2 workers, shards 90/10", [90, 10]),
                         ("2 equal shards", [50, 50])):
        out.append({"label": label, "kind": "average", "sizes": sizes,
                    "grads": [[torch.randn(5, 3, generator=g, dtype=torch.float64),
                               torch.randn(3, generator=g, dtype=torch.float64)] for _ in sizes]})
    return out


def _avg_worker(fn, case: dict, rank: int, port: int, results) -> None:
    import datetime
    import os

    import torch.distributed as dist

    try:
        world = len(case["sizes"])
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=15))
        try:
            out = fn([t.clone() for t in case["grads"][rank]], case["sizes"][rank], sum(case["sizes"]))
            results.put((rank, [t.detach().numpy().copy() for t in out]))  # by value: no shared-memory handles
        finally:
            dist.destroy_process_group()
    except BaseException as e:
        results.put((rank, f"{type(e).__name__}: {e}"))
    finally:
        results.close()
        results.join_thread()  # what was put has left this process
        os._exit(0)


def _avg_harness(fn: Callable, case: dict) -> dict:
    """FN on real gloo workers: one forked process per shard (fork: they inherit FN, the submission's function, as
    it is), meeting on 127.0.0.1; every worker's result comes back."""
    import multiprocessing

    from gradlab.distributed import _loopback_only, free_port

    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    port = free_port()
    with _loopback_only():
        procs = [ctx.Process(target=_avg_worker, args=(fn, case, r, port, results), daemon=True)
                 for r in range(len(case["sizes"]))]
        for p in procs:
            p.start()
    try:
        got = dict(results.get(timeout=30) for _ in procs)
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
    errors = [v for v in got.values() if isinstance(v, str)]
    if errors:
        raise RuntimeError(f"a worker failed: {errors[0]}")
    return {"ranks": [[torch.from_numpy(a) for a in got[r]] for r in range(len(procs))]}


AVERAGE = Checks(
    cases=_avg_cases, harness=_avg_harness, reference=_avg_reference,
    mistakes=[
        Mistake("equal weights", _avg_equal_weights, lambda s, r: "you averaged the shards with equal weights "
                "(all_reduce, then / W): right for equal shards only. Weigh each worker's gradient by n_r / B "
                "before the all-reduce"),
        Mistake("no all-reduce", _avg_local, lambda s, r: "every worker returned its own gradient: call "
                "dist.all_reduce so that all of them get the same, global one"),
        Mistake("sum of means", _avg_summed, lambda s, r: "you added the workers' mean gradients without weights: "
                "the result is about W times too large. Multiply each by n_r / B before the all-reduce"),
    ],
    claims={"average": ("on real gloo workers, every worker's result ≡ the whole batch's gradient Σ_r (n_r/B)·ḡ_r "
                        "(max relative |Δ|)", 1e-12)})


CHECKS: dict[str, Checks] = {"mnist.sgd_step": SGD, "mnist.softmax_grad": GRAD, "clip.clip_by_global_norm": CLIP,
                             "jacobian.jacobian_loop": JACOBIAN, "log1pexp.Log1pExp": LOG1PEXP,
                             "gaussian-policy.score": SCORE, "dqn.td_loss": TD, "actor-critic.critic_update": CRITIC,
                             "ddp.accumulated_grad": ACCUMULATE, "ddp.average_gradients": AVERAGE}
