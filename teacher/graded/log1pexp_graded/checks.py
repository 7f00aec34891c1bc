"""The reference and the known mistakes of Log1mExp, on gradlab's side only (never in the sandbox).

The reference is mpmath's, at each input exactly as the float32 or float64 number it is: f(x) = log(−expm1(−x)),
f'(x) = 1/expm1(x), f''(x) = −eˣ/expm1(x)², then the harness's logarithms, rounded to float64. It works with 50 + x
significant digits: 1 − e^−x begins with about x/2.3 nines, so that at x = 300 fifty digits alone would round it to
1. No formula a student could write takes part in it."""

import mpmath
import torch

from gradlab.kit.exercise import Checks, Mistake

from .harness import HARNESSES


def _exact(x: float, dy: float, v: float) -> tuple[float, float, float]:
    with mpmath.workdps(50 + int(x)):
        X = mpmath.mpf(x)
        f = mpmath.log(-mpmath.expm1(-X))
        f1 = 1 / mpmath.expm1(X)
        f2 = -mpmath.exp(X) / mpmath.expm1(X) ** 2
        return (float(mpmath.log(-f)), float(mpmath.log(mpmath.mpf(dy) * f1)),
                float(mpmath.log(-mpmath.mpf(dy) * mpmath.mpf(v) * f2)))


def _expected(case: dict) -> dict:
    rows = [_exact(float(x), float(dy), float(v)) for x, dy, v in zip(case["x"].tolist(), case["dy"].tolist(),
                                                                       case["v"].tolist(), strict=True)]
    value, gradient, second = (torch.tensor(col, dtype=torch.float64) for col in zip(*rows, strict=True))
    return {"log −value": value, "log gradient": gradient, "log −second": second}


LOG2 = 0.6931471805599453


def _stable(x):
    return torch.where(x <= LOG2, torch.log(-torch.expm1(-x)), torch.log1p(-torch.exp(-x)))


def _slope(x):
    return torch.exp(-x) / -torch.expm1(-x)  # e^−x / (1 − e^−x): autograd differentiates it without overflow


def _function(forward, backward, save_slope: bool = False) -> type:
    """An autograd.Function of FORWARD and BACKWARD(x, dy) (or, SAVE_SLOPE, f'(x) computed in forward and saved)."""
    class Made(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(_slope(x) if save_slope else x)
            return forward(x)

        @staticmethod
        def backward(ctx, dy):
            saved, = ctx.saved_tensors
            return dy * saved if save_slope else backward(saved, dy)

    return Made


class _Reference(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _stable(x)

    @staticmethod
    def backward(ctx, dy):
        x, = ctx.saved_tensors
        return dy * _slope(x)


_Naive = _function(lambda x: torch.log(1 - torch.exp(-x)), lambda x, dy: dy * torch.exp(-x) / (1 - torch.exp(-x)))
_Log1pOnly = _function(lambda x: torch.log1p(-torch.exp(-x)), lambda x, dy: dy * _slope(x))
_Expm1Only = _function(lambda x: torch.log(-torch.expm1(-x)), lambda x, dy: dy * _slope(x))
_Reciprocal = _function(_stable, lambda x, dy: dy / torch.expm1(x))
_SlopeSaved = _function(_stable, None, save_slope=True)
_DyForgotten = _function(_stable, lambda x, dy: _slope(x))
_NaiveForward = _function(lambda x: torch.log(1 - torch.exp(-x)), lambda x, dy: dy * _slope(x))
_Swapped = _function(lambda x: torch.where(x <= LOG2, torch.log1p(-torch.exp(-x)), torch.log(-torch.expm1(-x))),
                     lambda x, dy: dy * _slope(x))
_ExpMinusOne = _function(_stable, lambda x, dy: dy / (torch.exp(x) - 1))
_SignFlipped = _function(_stable, lambda x, dy: -dy * _slope(x))


CHECKS = {"Log1mExp": Checks(
    harness=HARNESSES["Log1mExp"], reference=_Reference, expected=_expected,
    mistakes=[
        Mistake(name="naive", fn=_Naive,
                diagnosis="log(1 − exp(−x)) as written: near x = 0, 1 − e^−x subtracts two nearly equal numbers and "
                          "keeps few of its digits (at x = 1e-7 in float32, e^−x rounds to 1 and the value is "
                          "log 0); far out, e^−x falls below the rounding of 1 and 1 − e^−x is 1, so the value is 0 "
                          "where it is −e^−x. Compute log(−expm1(−x)) for x ≤ log 2 and log1p(−exp(−x)) above "
                          "(Mächler 2012), and the backward as e^−x / (−expm1(−x))"),
        Mistake(name="log1p only", fn=_Log1pOnly,
                diagnosis="log1p(−exp(−x)) is accurate for x > log 2 but not near 0: there −e^−x is close to −1, and "
                          "1 + (−e^−x) inside log1p cancels as 1 − e^−x does. Use log(−expm1(−x)) for x ≤ log 2 "
                          "(Mächler 2012)"),
        Mistake(name="expm1 only", fn=_Expm1Only,
                diagnosis="log(−expm1(−x)) is accurate near 0 but not far out: −expm1(−x) = 1 − e^−x rounds to 1 once "
                          "e^−x is below the rounding of 1, and log(1) = 0 where the value is −e^−x. Use "
                          "log1p(−exp(−x)) for x > log 2 (Mächler 2012)"),
        Mistake(name="1/expm1(x) backward", fn=_Reciprocal,
                diagnosis="the value and the gradient are right, but autograd differentiates dy / expm1(x) as "
                          "−dy · eˣ · (1/expm1(x))²: far out the square of 1/expm1(x) underflows to 0, so the second "
                          "derivative is 0 where it is −eˣ/(eˣ − 1)². Write the backward as dy · e^−x / (−expm1(−x)), "
                          "whose derivative autograd forms from e^−x alone"),
        Mistake(name="f' saved in forward", fn=_SlopeSaved,
                diagnosis="the value and the gradient are right, but the second derivative is 0: f'(x) computed in "
                          "forward and saved is a constant to autograd. Save x, and compute f'(x) from it in "
                          "backward with torch ops"),
        Mistake(name="naive forward", fn=_NaiveForward,
                diagnosis="your backward is right, but the forward is log(1 − exp(−x)) as written: near x = 0, "
                          "1 − e^−x cancels (at x = 1e-7 in float32 e^−x rounds to 1: log 0), and far out 1 − e^−x "
                          "rounds to 1 (the value 0 where it is −e^−x). Compute log(−expm1(−x)) for x ≤ log 2 and "
                          "log1p(−exp(−x)) above (Mächler 2012)"),
        Mistake(name="branches swapped", fn=_Swapped,
                diagnosis="your two branches are swapped: log1p(−exp(−x)) is the accurate one far out (x > log 2), "
                          "log(−expm1(−x)) near 0 (x ≤ log 2); yours uses each where the other belongs"),
        Mistake(name="1/(eˣ − 1) backward", fn=_ExpMinusOne,
                diagnosis="your backward's 1/(exp(x) − 1) cancels near x = 0 (exp(x) − 1 keeps few digits; at x = "
                          "1e-12 it is off) and its derivative overflows far out: write it as e^−x / (−expm1(−x)), "
                          "accurate at both ends"),
        Mistake(name="backward's sign", fn=_SignFlipped,
                diagnosis="your backward returns −f'(x): f(x) = log(1 − e^−x) increases, f'(x) = e^−x / (1 − e^−x) "
                          "> 0 (−expm1(−x) = 1 − e^−x is positive; expm1(−x) alone is negative)"),
        Mistake(name="dy forgotten", fn=_DyForgotten,
                diagnosis="your backward returns f'(x) alone: it must return dy · f'(x), the upstream gradient times "
                          "the derivative (the chain rule); right only where dy = 1"),
    ],
    names={"log −value": "log(−your value)", "log gradient": "log(your gradient)",
           "log −second": "log(−your second derivative)"},
    spot=lambda case, key: (case["x"], "x"),
    hints={("*", "nonfinite", "*"): "a number came out 0, of the wrong sign, or NaN/inf where it is a small negative "
                                    "(value, second derivative) or positive (gradient) number: its logarithm is then "
                                    "−inf or NaN"})}
