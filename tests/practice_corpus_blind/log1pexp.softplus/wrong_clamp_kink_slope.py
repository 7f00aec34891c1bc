"""gradlab exercise log1pexp.softplus (level 2): log(1 + eˣ) as a plain function whose autograd gradient is
finite and right everywhere, x = 0 and ±100 included.

Write it yourself: this exercise is to write what torch.nn.functional.softplus, torch.ops.aten.softplus do for
you, so calling one of them fails a check of its own.

Write the body of softplus below, then check it:

    gradlab check softplus.py
"""

# gradlab-exercise: log1pexp.softplus
import torch
import torch.nn.functional as F


def softplus(x):
    """softplus(x) = log(1 + eˣ), written with torch operations so that autograd's gradient of it is σ(x) =
    1/(1 + e^−x) everywhere and its second derivative σ(x)(1 − σ(x)): no NaN at x = ±100 in float32, no
    wrong slope at x = 0. Autograd differentiates your formula as written, each branch and each kink included.

    Shapes: x any shape, float32 or float64. F.softplus computes this (the check compares yours with the closed
    forms): write it yourself here. TF-1: tf.nn.softplus; the tutorial wrote log(1 + exp(x)) and got NaN.
    """
    return torch.clamp(x, min=0) + torch.log1p(torch.exp(-torch.abs(x)))
