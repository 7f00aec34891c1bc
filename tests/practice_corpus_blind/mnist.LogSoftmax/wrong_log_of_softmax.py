"""gradlab exercise mnist.LogSoftmax (level 3): log_softmax as a torch.autograd.Function: stable at logits near
100 and −1000 in float32, its backward a vector-Jacobian product.

Write it yourself: this exercise is to write what torch.nn.functional.log_softmax, torch.log_softmax,
torch.Tensor.log_softmax, torch.special.log_softmax, torch._log_softmax, torch.ops.aten.log_softmax,
torch.ops.aten._log_softmax, torch.ops.aten.special_log_softmax do for you, so calling one of them fails a
check of its own.

Write the body of LogSoftmax below, then check it:

    gradlab check LogSoftmax.py
"""

# gradlab-exercise: mnist.LogSoftmax
import torch
import torch.nn.functional as F


class LogSoftmax(torch.autograd.Function):
    """forward(ctx, z) = log softmax(z) along the last dimension, computed so that it never overflows:
    z − logsumexp(z) = (z − m) − log Σ_j exp(z_j − m),  m = max_j z_j
    backward(ctx, dy) = dy − softmax(z) · Σ_j dy_j   (the Jacobian is I − 1·softmax(z)ᵀ), written with
    torch operations on the saved z, so that the second derivative is right too.

    Shapes: z (N, K) logits, float32 or float64; dy has z's shape. F.log_softmax computes this (the check
    compares yours with autograd through it): write it yourself here, without F.log_softmax. TF-1: the
    tutorial's cost took tf.log(tf.nn.softmax(z)), which is log 0 = −inf once a probability underflows;
    tf.nn.log_softmax is the stable one.
    """

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return torch.log(torch.softmax(z, dim=-1))

    @staticmethod
    def backward(ctx, dy):
        z, = ctx.saved_tensors
        m = z.max(dim=-1, keepdim=True).values
        e = torch.exp(z - m)
        p = e / e.sum(dim=-1, keepdim=True)
        return dy - p * dy.sum(dim=-1, keepdim=True)
