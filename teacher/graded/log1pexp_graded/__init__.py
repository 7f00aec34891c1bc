"""log1pexp's graded variant: log(1 − e^−x) as a torch.autograd.Function, accurate near x = 0 and
far out, with a right second derivative (the skill of log1pexp.Log1pExp and log1pexp.softplus, whose answers every
student's gradlab holds: the log1pexp lesson's StableLog1pExp and double_where).

The two branches are Mächler's: log1mexp(a) = log(−expm1(−a)) for 0 < a ≤ log 2 and log1p(−exp(−a)) for a > log 2
(M. Mächler, "Accurately Computing log(1 − exp(−|a|)). Assessed by the Rmpfr package", 2012, a vignette of the CRAN
package Rmpfr): each formula loses its accuracy on the other side of log 2. Torch-free: the starter and the pre-flight
read it."""

from gradlab.kit.exercise import Exercise

LOGS = "log(−value), log(gradient) and log(−second derivative)"

EXERCISES = [
    Exercise(
        function="Log1mExp", level=3,
        what="log(1 − e^−x) for x > 0 as a torch.autograd.Function: accurate near x = 0 and far out, in float32 "
             "and float64, and a right second derivative",
        signature="class Log1mExp(torch.autograd.Function):",
        doc="""forward(ctx, x) = f(x) = log(1 − e^−x), for x > 0 (f is negative), computed so that it keeps its
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
        wrote log(1 + eˣ)'s.""",
        claims={"float32": (f"float32: {LOGS} ≡ mpmath's (at least 50 digits) (max |Δ| of the logarithms over each "
                            "range, divided by the range's largest |log|)", 1e-5),
                "float64": ("float64: the same, measured the same way", 1e-12)},
        forward="x"),
]
