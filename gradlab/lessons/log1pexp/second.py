"""Second derivatives, measured: each way a user asks for one (autograd.grad twice, .backward() on the grad,
functional.hessian) against the exact value, gradcheck and gradgradcheck, and where a port's f'' breaks in float32 (the
log1pexp lesson's Functions are handed in: gradlab/lessons/log1pexp/lesson.py)."""

from __future__ import annotations

import math
from collections.abc import Callable

import mpmath
import torch

from gradlab.kit.result import Column, Table

SECOND_X = torch.linspace(-5, 5, 11, dtype=torch.float64)


def _exact_second() -> tuple[torch.Tensor, torch.Tensor]:
    """f''(x) = sigmoid'(x) and d²/dx² f(x)² = 2f'² + 2f·f'' at SECOND_X (float64; nothing overflows on −5..5)."""
    s = torch.sigmoid(SECOND_X)
    f, d2 = torch.log1p(torch.exp(SECOND_X)), s * (1 - s)
    return d2, 2 * s**2 + 2 * f * d2


def _raised(err: Exception) -> str:
    """The words of PyTorch's error that say what happened (the whole message is in the metrics)."""
    msg = str(err)
    for words in ("trying to differentiate twice", "appears to not have been used in the graph",
                  "does not require grad"):
        if words in msg:
            return f'raises "{words}"'
    return f"raises {type(err).__name__}"


def second_derivatives(fn: Callable) -> dict[str, float | str]:
    """Each way of asking for a second derivative: max |Δ| from the exact value (float64, x = −5..5), or what it
    raised. The routes are what a user would write; none of them is told what the Function is."""
    f2, sq2 = _exact_second()
    out: dict[str, float | str] = {}

    def attempt(name, compute, exact):
        try:
            out[name] = float((compute() - exact).abs().max())
        except RuntimeError as err:
            out[name] = _raised(err)
            out[name + " (message)"] = str(err).splitlines()[0]

    def grad_twice(loss):
        x = SECOND_X.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(loss(x), x, create_graph=True)
        (h,) = torch.autograd.grad(g.sum(), x)
        return h

    def backward_twice(loss):
        x = SECOND_X.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(loss(x), x, create_graph=True)
        g.sum().backward()
        return x.grad

    def squares(x):
        return (fn(x) ** 2).sum()

    attempt("f'': grad twice of Σ f", lambda: grad_twice(lambda x: fn(x).sum()), f2)
    attempt("Σ f²: grad twice", lambda: grad_twice(squares), sq2)
    attempt("Σ f²: .backward() on the grad", lambda: backward_twice(squares), sq2)
    attempt("Σ f²: functional.hessian",
            lambda: torch.autograd.functional.hessian(squares, SECOND_X.clone()).diagonal(), sq2)
    return out


SECOND_ROUTES = ("f'': grad twice of Σ f", "Σ f²: grad twice",
                 "Σ f²: .backward() on the grad", "Σ f²: functional.hessian")


F2_SCAN = torch.arange(0, 101, dtype=torch.float32)  # x = 0, 1, …, 100: where the faithful port's f'' breaks
F2_RIGHT = 1e-3  # "right": within 0.1 % of the exact f''
F2_ROWS = (40, 43, 44, 46, 48, 50, 51, 52, 60, 88, 89)
TINY = torch.finfo(torch.float32).tiny  # the smallest normal float32


def f2_float32(fn: Callable, flush_denormal: bool) -> dict | None:
    """FN's f'' (the faithful port's, in the lesson) in float32 at F2_SCAN against the exact sigmoid'(x) (mpmath), with
    subnormals kept (PyTorch's default) or flushed to zero (what TF-1's CPU threads did:
    tensorflow/core/lib/core/threadpool.cc, "Set the processor flag to flush denormals to zero"): per x the value and
    its relative error, the last x up to which every point is right, the first x where it is 0 and where it is NaN. None
    where this CPU cannot flush."""
    x = F2_SCAN.clone().requires_grad_(True)
    if flush_denormal and not torch.set_flush_denormal(True):
        return None
    try:
        (g,) = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
        (h,) = torch.autograd.grad(g.sum(), x)
    finally:
        torch.set_flush_denormal(False)
    xs = [int(v) for v in F2_SCAN]
    exact_f2 = [_exact_f2(v) for v in xs]
    values = [float(v) for v in h]
    errors = [abs(v - e) / e if math.isfinite(v) else math.nan for v, e in zip(values, exact_f2, strict=True)]
    first_off = next(x for x, err in zip(xs, errors, strict=True) if not err <= F2_RIGHT)
    first_zero = next(x for x, v in zip(xs, values, strict=True) if v == 0)
    return {"x": xs, "f2": values, "exact": exact_f2, "relative_error": errors, "last_right_x": first_off - 1,
            "first_zero_x": first_zero, "exact_at_first_zero": exact_f2[first_zero],
            "first_nan_x": next(x for x, v in zip(xs, values, strict=True) if math.isnan(v))}


def _exact_f2(x: float) -> float:
    """f''(x) = sigmoid'(x) = e⁻ˣ/(1 + e⁻ˣ)² with 50 significant digits (mpmath), rounded to float64."""
    with mpmath.workdps(50):
        z = mpmath.exp(-mpmath.mpf(x))
        return float(z / (1 + z) ** 2)


def f2_float32_table(kept: dict, flushed: dict | None) -> Table:
    cols = [kept] + ([flushed] if flushed else [])
    return Table("the faithful port's f'' in float32 (autograd.grad twice) against the exact sigmoid'(x) (mpmath)",
                 [Column(header="x", format="g"), Column(header="exact f''", format=".3g"),
                  Column(header="subnormals kept", format=".3g"), Column(header="rel. error", format=".3g"),
                  *([Column(header="flushed to 0 (TF-1 CPU)", format=".3g"), Column(header="rel. error", format=".3g")]
                    if flushed else [])],
                 [[x, kept["exact"][x], *[v for c in cols for v in (c["f2"][x], c["relative_error"][x])]]
                  for x in F2_ROWS],
                 note=f"the backward's 1/(1 + eˣ)² ≈ e⁻²ˣ is below float32's smallest normal number "
                      f"{TINY:.3g} from x = {-math.log(TINY) / 2:.1f} and rounds to 0 (below half the smallest "
                      f"subnormal, 2⁻¹⁴⁹) from x = {150 * math.log(2) / 2:.1f}")


def checks(fn: Callable) -> tuple[bool, bool]:
    """(gradcheck passes, gradgradcheck passes), float64, without raising."""
    x = torch.linspace(-4, 4, 9, dtype=torch.float64, requires_grad=True)
    ok1 = torch.autograd.gradcheck(fn, (x,), raise_exception=False)
    ok2 = torch.autograd.gradgradcheck(fn, (x,), raise_exception=False)
    return bool(ok1), bool(ok2)


def port_without_f2_term(fn: Callable) -> float:
    """max |d²/dx² Σ f(x)² − 2f'²| for FN (the e-on-ctx port, in the lesson) by autograd.grad twice: 0 when exactly the
    2f·f'' term is missing (the exact value is 2f'² + 2f·f''), NaN if it raised."""
    x = SECOND_X.clone().requires_grad_(True)
    try:
        (g,) = torch.autograd.grad((fn(x) ** 2).sum(), x, create_graph=True)
        (h,) = torch.autograd.grad(g.sum(), x)
    except RuntimeError:
        return math.nan
    s = torch.sigmoid(SECOND_X)
    return float((h - 2 * s**2).abs().max())


def hessian_is_zero(fn: Callable) -> bool:
    """Does autograd.functional.hessian of Σ f(x)² return all zeros (where the exact diagonal is 2f'² + 2f·f'' > 0)?"""
    return bool((torch.autograd.functional.hessian(lambda x: (fn(x) ** 2).sum(), SECOND_X.clone()) == 0).all())


def stored_e_has_no_graph(fn: Callable) -> bool:
    """The e FN (a port that keeps e on ctx) keeps, computed from an x that requires grad: does it lack a grad_fn?
    (It does.)"""
    x = torch.linspace(-1, 1, 3, dtype=torch.float64, requires_grad=True)
    y = fn(x)
    e = getattr(y.grad_fn, "e", None)  # a custom Function's grad_fn is its ctx
    return e is not None and e.grad_fn is None
