"""gradlab exercise clip.clip_by_global_norm (level 2): clip a list of gradients by their global norm, as
tf.clip_by_global_norm.

Write it yourself: this exercise is to write what torch.nn.utils.clip_grad_norm_,
torch.nn.utils.clip_grad_norm, torch.nn.utils.get_total_norm do for you, so calling one of them fails a check
of its own.

Write the body of clip_by_global_norm below, then check it:

    gradlab check clip_by_global_norm.py
"""

# gradlab-exercise: clip.clip_by_global_norm
import torch
import torch.nn.functional as F


def clip_by_global_norm(grads, clip_norm):
    """Scale every gradient by one factor so that their global norm is at most clip_norm.

    global_norm = sqrt(Σ_i ‖g_i‖²)                    over every tensor of the list together
    g_i ← g_i · clip_norm / max(global_norm, clip_norm)  one scale for all: the direction is kept

    Shapes: grads, a list of tensors of any shapes; clip_norm a positive float. Return a new list of tensors
    of the same shapes; the tensors you were given are not changed. torch.nn.utils.clip_grad_norm_ does this
    to parameters' .grad (the check compares yours with it): write it yourself here. TF-1: clipped, _ =
    tf.clip_by_global_norm(grads, clip_norm).
    """
    total = torch.sqrt(sum((g ** 2).sum() for g in grads))
    scale = clip_norm / torch.clamp(total, min=clip_norm)
    return [g * scale for g in grads]
