"""gradlab exercise clip_graded.clip_by_norm (level 2): clip every slice of a tensor by its own L2 norm along the
given axes, as TF-1's tf.clip_by_norm(t, clip_norm, axes), with a gradient that is finite everywhere.

Write it yourself: this exercise is to write what torch.renorm, torch.Tensor.renorm, torch.Tensor.renorm_ do
for you, so calling one of them fails a check of its own.

Write the body of clip_by_norm below, then hand it in as clip_by_norm.py: your teacher checks it with the course's own checks,

    gradlab check clip_by_norm.py --course course.toml
"""

# gradlab-exercise: clip_graded.clip_by_norm
import torch
import torch.nn.functional as F


def clip_by_norm(t, clip_norm, axes):
    """One norm per slice: the L2 norm over the dimensions in axes, the other dimensions kept.

    n = sqrt(Σ_{axes} t²)                     shape: t's, with each dimension of axes reduced to 1
    t ← t · clip_norm / max(n, clip_norm)      each slice scaled by its own factor; a slice whose norm is
    at most clip_norm is left as it is

    e.g. t of shape (6, 5) and axes = (1,): six rows, each clipped by its own norm. TF-1:
    tf.clip_by_norm(t, clip_norm, axes) (tensorflow/python/ops/clip_ops.py).

    Write it with torch operations on t: the check differentiates your function with autograd (for a random
    upstream gradient dy), so its gradient must be right and finite everywhere, at a slice that is all zeros
    too (TF-1 computes its norm with a "two-tap tf.where trick to bypass NaN gradients").

    Shapes: t any shape, float32 or float64; clip_norm a positive float; axes a tuple of dimensions (possibly
    negative, possibly all of them). Return a tensor of t's shape. The inputs: rows, columns, (4, 5) slices of
    a 3-D tensor, the whole tensor, the last axis, slices above and below clip_norm, norms in the thousands,
    an all-zero row and an all-zero tensor.
    """
    sq = t.pow(2).sum(dim=axes)
    denom = torch.sqrt(torch.clamp(sq, min=clip_norm ** 2))
    return t * (clip_norm / denom)
