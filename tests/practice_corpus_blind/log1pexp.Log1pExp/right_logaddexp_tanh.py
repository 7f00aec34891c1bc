"""gradlab exercise log1pexp.Log1pExp (level 3): log(1 + eˣ) as a torch.autograd.Function: no overflow at x = 100
in float32, a right second derivative.

Write the body of Log1pExp below, then check it:

    gradlab check Log1pExp.py
"""

# gradlab-exercise: log1pexp.Log1pExp
import torch
import torch.nn.functional as F


class Log1pExp(torch.autograd.Function):
    """forward(ctx, x) = log(1 + eˣ), computed so that it never overflows: max(x, 0) + log1p(exp(−|x|))
    backward(ctx, dy) = dy · sigmoid(x), written with differentiable torch ops on the saved x, so that the
    second derivative (sigmoid'(x)) is right too. The check sends a random upstream gradient dy.

    Shapes: x any shape, float32 or float64. TF-1: @tf.custom_gradient, whose backward dy · (1 − 1/(1 + e))
    was built from the graph tensor e = tf.exp(x), so a second tf.gradients differentiated it. Keeping e from
    forward on ctx instead makes it a constant to autograd: a second derivative then raises or silently
    drops the f'' term, and the check measures it as 0.
    """

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.logaddexp(x, torch.zeros_like(x))

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return dy * 0.5 * (1 + torch.tanh(0.5 * x))
