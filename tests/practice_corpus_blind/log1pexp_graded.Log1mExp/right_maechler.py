"""gradlab exercise log1pexp_graded.Log1mExp (level 3): log(1 − e^−x) for x > 0 as a torch.autograd.Function:
accurate near x = 0 and far out, in float32 and float64, and a right second derivative.

Write the body of Log1mExp below, then hand it in as Log1mExp.py: your teacher checks it with the course's own checks,

    gradlab check Log1mExp.py --course course.toml
"""

# gradlab-exercise: log1pexp_graded.Log1mExp
import torch
import torch.nn.functional as F


class Log1mExp(torch.autograd.Function):
    """forward(ctx, x) = f(x) = log(1 − e^−x), for x > 0 (f is negative), computed so that it keeps its
    relative accuracy everywhere: near x = 0, where 1 − e^−x cancels, and far out, where
    f(x) ≈ −e^−x is tiny (Mächler 2012, "Accurately computing log(1 − exp(−|a|))").
    backward(ctx, dy) = dy · f'(x),  f'(x) = e^−x / (1 − e^−x) = 1 / (eˣ − 1)
    written with differentiable torch ops on the saved x, so that autograd's second derivative
    f''(x) = −eˣ / (eˣ − 1)² is right too (near 0 and far out).

    The check compares logarithms: those of −f, of the gradient and of −(the second derivative), against
    mpmath's values (50 digits and more), so that a value of 1e-30 that is off by 10% fails as surely as a value
    of 1. |Δ log| is each number's relative error, and the bound holds it against the largest |log| of each
    range of inputs (≈ 80 for float32's x = 10 … 80): a relative error of about 1e-5 × that largest |log|
    passes. The upstream gradient dy and the second derivative's direction are random and positive. The inputs,
    in float32: x = 1e-7 … 1e-3, 0.01 … 5 (log 2 included) and 10 … 80; in float64: x = 1e-15 … 1e-3, 0.01 … 5
    and 10 … 700, and random x.

    Shapes: x any shape, float32 or float64, every entry > 0. TF-1: @tf.custom_gradient, as the tutorial
    wrote log(1 + eˣ)'s.
    """

    @staticmethod
    def forward(ctx, x):
        import math
        ctx.save_for_backward(x)
        return torch.where(x < math.log(2), torch.log(-torch.expm1(-x)), torch.log1p(-torch.exp(-x)))

    @staticmethod
    def backward(ctx, dy):
        x, = ctx.saved_tensors
        e = torch.exp(-x)
        return dy * e / (-torch.expm1(-x))
