"""gradlab exercise gaussian-policy.GaussianLogProb (level 3): the Gaussian policy's layer as a
torch.autograd.Function: ln π forward, its three gradients in backward.

Write it yourself: this exercise is to write what torch.distributions.Normal.log_prob does for you, so calling
it fails a check of its own.

Write the body of GaussianLogProb below, then check it:

    gradlab check GaussianLogProb.py
"""

# gradlab-exercise: gaussian-policy.GaussianLogProb
import torch
import torch.nn.functional as F


class GaussianLogProb(torch.autograd.Function):
    """forward(ctx, a, mu, sigma) = ln N(a; μ, σ²) = −(a − μ)²/(2σ²) − ln σ − ½ ln 2π, elementwise
    backward(ctx, dy) = (dy · ∂ln π/∂a, dy · ∂ln π/∂μ, dy · ∂ln π/∂σ), with
    ∂ln π/∂a = −(a − μ)/σ²,  ∂ln π/∂μ = (a − μ)/σ²,  ∂ln π/∂σ = ((a − μ)² − σ²)/σ³
    written with torch operations on the saved inputs, so that second derivatives are right too. The check
    sends a random upstream gradient dy.

    Shapes: a, mu, sigma of the same shape, float64; sigma > 0. torch.distributions.Normal(mu, sigma).log_prob
    computes this (the check compares yours with autograd through it): write it yourself here. TF-1: the
    tutorial's @tf.custom_gradient layer returned the scores from its forward and `_y * dy` from its
    gradient function; here the forward is ln π and the backward the scores.
    """

    @staticmethod
    def forward(ctx, a, mu, sigma):
        ctx.save_for_backward(a, mu, sigma)
        z = (a - mu) / sigma
        return -0.5 * z * z - torch.log(sigma) - 0.9189385332046727

    @staticmethod
    def backward(ctx, dy):
        a, mu, sigma = ctx.saved_tensors
        z = (a - mu) / sigma
        g_mu = z / sigma
        g_sigma = (z * z - 1) / sigma
        return -dy * g_mu, dy * g_mu, dy * g_sigma
