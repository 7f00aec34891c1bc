"""gradlab exercise clip.clip_across_ranks (level 3): clip by the global norm when every rank holds a different
shard of the gradients: all-reduce the squared norms, on real gloo workers.

Write it yourself: this exercise is to write what torch.nn.utils.clip_grad_norm_,
torch.nn.utils.clip_grad_norm do for you, so calling one of them fails a check of its own.

Write the body of clip_across_ranks below, then check it:

    gradlab check clip_across_ranks.py
"""

# gradlab-exercise: clip.clip_across_ranks
import torch
import torch.nn.functional as F


def clip_across_ranks(grads, clip_norm):
    """Called on every worker of a torch.distributed job (gloo, on this machine) at the same time. Each rank
    holds the gradients of its own shard of the model's parameters (they differ in number and shape from rank
    to rank); clip them all by the global norm of the whole model:

    s_r = Σ_{g in this rank's grads} ‖g‖²           this rank's part of the squared norm
    S = Σ_r s_r                                    dist.all_reduce(s, op=dist.ReduceOp.SUM), on every rank
    g ← g · clip_norm / max(sqrt(S), clip_norm)    the same scale on every rank

    Shapes: grads, this rank's list of tensors (float64); clip_norm a positive float. Return the list of clipped
    tensors. TF-1's tf.clip_by_global_norm received the whole list of gradients in one graph (TF moved tensors
    between devices itself); when each process holds only its shard of the gradients, the squared norms must be
    all-reduced first.
    """
    s = torch.zeros((), dtype=torch.float64)
    for g in grads:
        s = s + (g * g).sum()
    scale = clip_norm / torch.clamp(torch.sqrt(s), min=clip_norm)
    return [g * scale for g in grads]
