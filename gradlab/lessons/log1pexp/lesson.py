"""Custom gradients: log(1 + exp(x)) and its NaN gradient at x = 100 in float32.

f(x) = log(1 + eˣ) (softplus) has the derivative f'(x) = eˣ/(1 + eˣ) = sigmoid(x), which is always in [0, 1].
Computed naively, autograd differentiates the formula as written: d/dx log(1 + e) = e/(1 + e) with e = eˣ.
In float32, eˣ overflows to inf from x ≈ 88.72, so at x = 100 the gradient is inf/inf = NaN (and the value is inf).

The tutorial's fix, a custom gradient (TF-1 `@tf.custom_gradient`):

    e = exp(x)
    forward:   log(1 + e)
    backward:  dy · (1 − 1/(1 + e))          finite at x = 100: 1 − 1/inf = 1

Its two flaws, which this lesson measures:
  * the *value* is still log(1 + inf) = inf in float32;
  * the backward is built from the saved number e, which autograd sees as a constant, so differentiating the
    gradient again (the second derivative, `gradgradcheck`) gives 0 instead of sigmoid'(x): wrong Hessians.

The fully right version computes the forward stably and writes the backward with differentiable ops on x:

    forward:   max(x, 0) + log1p(exp(−|x|))    (never overflows: exp of a non-positive number)
    backward:  dy · sigmoid(x)                  (torch records it, so the second derivative is right too)

For x ≪ 0 the naive and the tutorial's forms lose everything too: 1 + e rounds to 1 and log(1) = 0, where the
answer is e^x (log1p avoids that).

The classic trap: guarding the naive formula with `torch.where(x < 20, log(1 + exp(x)), x)` fixes the value
but not the gradient. Autograd differentiates *both* branches and multiplies the unused one by 0; its
gradient is NaN at x = 100, and 0 · NaN = NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import mpmath
import numpy as np
import torch
import torch.nn.functional as F

from gradlab.lessons.log1pexp.settings import Config  # the settings, declared once (no torch: --help reads them)
from gradlab.result import Claim, Result, Table

DTYPES = {"float32": torch.float32, "float64": torch.float64}
DEFAULT_X = "-100,-20,0,20,88,89,100,1000"
CLAIM_X = 100.0  # the tutorial's x: where float32's naive gradient is NaN
ULP_BOUND = 4  # "within a few ulps"



# The code `--explain` shows beside the math, read from this file at run time.
EXPLAIN = ("naive", "where_guard", "TutorialLog1pExp", "StableLog1pExp")


# ---------------------------------------------------------------------------------------------------------------
# Five ways to compute log(1 + eˣ) and its gradient.
# ---------------------------------------------------------------------------------------------------------------

def naive(x: torch.Tensor) -> torch.Tensor:
    """log(1 + eˣ) as written; autograd gives e/(1 + e), inf/inf = NaN once eˣ overflows."""
    return torch.log(1 + torch.exp(x))


def where_guard(x: torch.Tensor) -> torch.Tensor:
    """The trap: the value is fixed, but the unused branch's NaN gradient is multiplied by 0, and 0·NaN = NaN."""
    return torch.where(x < 20, torch.log(1 + torch.exp(x)), x)


class TutorialLog1pExp(torch.autograd.Function):
    """The tutorial's @tf.custom_gradient: backward dy · (1 − 1/(1 + e)) from the saved e = eˣ."""

    @staticmethod
    def forward(ctx, x):
        e = torch.exp(x)
        ctx.e = e  # a plain number to autograd: the backward below is not differentiable in x
        return torch.log(1 + e)  # still inf in float32 at x = 100

    @staticmethod
    def backward(ctx, dy):
        return dy * (1 - 1 / (1 + ctx.e))  # d/dx log(1 + eˣ) = 1 − 1/(1 + eˣ)


class StableLog1pExp(torch.autograd.Function):
    """Stable forward, and a backward made of differentiable ops on x: right values, gradients and Hessians."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))  # max(x, 0) + log(1 + e^−|x|)

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        # f'(x) = sigmoid(x), written so that nothing overflows: with z = e^−|x| ∈ (0, 1],
        # sigmoid(x) = 1/(1 + z) for x ≥ 0 and z/(1 + z) for x < 0 (torch.sigmoid(−100) in float32 flushes to 0;
        # this keeps the tiny 3.7e-44). Both branches are finite, so where() is safe here, and autograd records
        # these ops when create_graph=True: the second derivative is right too. (Not exp(−x.abs()): autograd
        # takes d|x|/dx = 0 at x = 0, which would make the second derivative 0 there instead of 1/4.)
        z = torch.exp(torch.where(x >= 0, -x, x))
        return dy * torch.where(x >= 0, 1 / (1 + z), z / (1 + z))


METHODS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "naive log(1+exp(x))": naive,
    "torch.where guard": where_guard,
    "tutorial custom gradient": TutorialLog1pExp.apply,
    "stable Function": StableLog1pExp.apply,
    "F.softplus": F.softplus,
}


def exact(x: float) -> tuple[float, float]:
    """log(1 + eˣ) and sigmoid(x) with 50 significant digits (mpmath), rounded to float64."""
    with mpmath.workdps(50):
        X = mpmath.mpf(x)
        return float(mpmath.log1p(mpmath.exp(X))), float(1 / (1 + mpmath.exp(-X)))


def value_and_grad(method: Callable, x: float, dtype: torch.dtype) -> tuple[float, float]:
    t = torch.tensor(x, dtype=dtype, requires_grad=True)
    y = method(t)
    (g,) = torch.autograd.grad(y, t)
    return float(y.detach()), float(g)


def ulps(value: float, reference: float, dtype: torch.dtype) -> float:
    """|value − reference| in units of the spacing of `dtype` numbers at the reference (inf if not finite)."""
    if not math.isfinite(value):
        return math.inf
    np_dtype = np.float32 if dtype == torch.float32 else np.float64
    ref = np_dtype(reference)
    spacing = float(np.spacing(np.abs(ref))) if ref != 0 else float(np.finfo(np_dtype).smallest_subnormal)
    return abs(value - float(ref)) / spacing


def second_derivative_error(fn: Callable) -> float:
    """max |f''(x) − sigmoid'(x)| over a few float64 points, by differentiating the gradient again."""
    x = torch.linspace(-5, 5, 11, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
    if not g.requires_grad:  # the backward was not recorded at all
        s = torch.sigmoid(x.detach())
        return float((s * (1 - s)).abs().max())
    (h,) = torch.autograd.grad(g.sum(), x)
    s = torch.sigmoid(x.detach())
    return float((h - s * (1 - s)).abs().max())


def checks(fn: Callable) -> tuple[bool, bool]:
    """(gradcheck passes, gradgradcheck passes), float64, without raising."""
    x = torch.linspace(-4, 4, 9, dtype=torch.float64, requires_grad=True)
    ok1 = torch.autograd.gradcheck(fn, (x,), raise_exception=False)
    ok2 = torch.autograd.gradgradcheck(fn, (x,), raise_exception=False)
    return bool(ok1), bool(ok2)



def run(config: Config, device: torch.device | None = None,
        progress: Callable[[str, int, int], None] = lambda *a: None) -> Result:
    """The table of values and gradients, and the claims. Pure: no printing. (CPU: the point is float rounding.)"""
    xs = [float(v) for v in config.x.split(",")]
    notes = []
    if CLAIM_X not in xs:  # the claims are about the tutorial's point: it must be in the table they refer to
        xs = sorted([*xs, CLAIM_X])
        notes.append(f"x = {CLAIM_X:g}, the tutorial's point that the claims are about, was added to the table")
    dtypes = list(DTYPES) if config.dtype == "both" else [config.dtype]
    tables, metrics = [], {}
    worst_value_ulps = worst_grad_ulps = 0.0
    for name in dtypes:
        dtype = DTYPES[name]
        rows, per_x = [], []
        for x in xs:
            v_exact, g_exact = exact(x)
            row_v, row_g = [x, "value"], [x, "gradient"]
            results = {}
            for method_name, method in METHODS.items():
                v, g = value_and_grad(method, x, dtype)
                results[method_name] = {"value": v, "grad": g}
                row_v.append(v)
                row_g.append(g)
            rows += [[*row_v, v_exact], [*row_g, g_exact]]
            stable = results["stable Function"]
            u_v, u_g = ulps(stable["value"], v_exact, dtype), ulps(stable["grad"], g_exact, dtype)
            worst_value_ulps, worst_grad_ulps = max(worst_value_ulps, u_v), max(worst_grad_ulps, u_g)
            per_x.append({"x": x, "exact": {"value": v_exact, "grad": g_exact}, **results,
                          "stable_ulps": {"value": u_v, "grad": u_g}})
        metrics[name] = per_x
        tables.append(Table(f"{name}: log(1 + eˣ) and d/dx, five ways, beside the exact answer (50 digits)",
                            ["x", "", *METHODS, "exact"], rows, [".6g", None] + [".9g"] * (len(METHODS) + 1)))
        progress(f"{name} table", dtypes.index(name) + 1, len(dtypes))

    naive_100 = value_and_grad(naive, CLAIM_X, torch.float32)[1]
    where_100 = value_and_grad(where_guard, CLAIM_X, torch.float32)[1]
    tutorial_100 = value_and_grad(TutorialLog1pExp.apply, CLAIM_X, torch.float32)
    stable_checks = checks(StableLog1pExp.apply)
    tutorial_checks = checks(TutorialLog1pExp.apply)
    tutorial_dd = second_derivative_error(TutorialLog1pExp.apply)
    stable_dd = second_derivative_error(StableLog1pExp.apply)
    metrics["checks"] = {"stable": {"gradcheck": stable_checks[0], "gradgradcheck": stable_checks[1],
                                    "second_derivative_error": stable_dd},
                         "tutorial": {"gradcheck": tutorial_checks[0], "gradgradcheck": tutorial_checks[1],
                                      "second_derivative_error": tutorial_dd}}
    tables.append(Table("gradcheck and gradgradcheck (float64, x in −4..4) and the second derivative",
                        ["Function", "gradcheck", "gradgradcheck", "max |f'' − sigmoid'| on −5..5"],
                        [["stable Function", _ok(stable_checks[0]), _ok(stable_checks[1]), stable_dd],
                         ["tutorial custom gradient", _ok(tutorial_checks[0]), _ok(tutorial_checks[1]), tutorial_dd]],
                        [None, None, None, ".3g"]))
    claims = [
        Claim.yes_no("naive-nan-at-100", "naive gradient at x = 100 in float32 is NaN", math.isnan(naive_100)),
        Claim.yes_no("where-guard-nan-at-100", "torch.where guard: the gradient at x = 100 in float32 is still NaN",
                     math.isnan(where_100)),
        Claim.yes_no("tutorial-value-inf", "tutorial's custom gradient: gradient at x = 100 (float32) is 1, but the "
                     "value is inf", tutorial_100[1] == 1.0 and math.isinf(tutorial_100[0])),
        Claim("stable-value-ulps", f"stable Function: value within a few ulps of exact at every x "
              f"({', '.join(dtypes)})", worst_value_ulps, ULP_BOUND),
        Claim("stable-grad-ulps", f"stable Function: gradient within a few ulps of exact at every x "
              f"({', '.join(dtypes)})", worst_grad_ulps, ULP_BOUND),
        Claim.yes_no("stable-gradcheck", "stable Function passes gradcheck and gradgradcheck",
                     all(stable_checks)),
        Claim("tutorial-gradgradcheck-fails", "tutorial's version fails gradgradcheck: its second derivative is "
              "off by (max |Δ|)", tutorial_dd, 0.01, ">"),
    ]
    return Result(lesson="log1pexp", title="custom gradients: log(1 + exp(x)) without NaN",
                  seed=config.seed, metrics=metrics, claims=claims, tables=tables,
                  notes=[*notes, "NaN and inf are shown in red; the stable Function's errors are measured in ulps "
                         "(spacing of the dtype's numbers at the exact answer)"])


def _ok(flag: bool) -> str:
    return "passes" if flag else "FAILS"
