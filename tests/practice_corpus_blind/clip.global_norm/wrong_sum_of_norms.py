"""gradlab exercise clip.global_norm (level 1): the global norm of a list of gradients, as tf.global_norm: one
number for all the tensors.

Write it yourself: this exercise is to write what torch.nn.utils.get_total_norm,
torch.nn.utils.clip_grad_norm_, torch.nn.utils.clip_grad_norm do for you, so calling one of them fails a check
of its own.

Write the body of global_norm below, then check it:

    gradlab check global_norm.py
"""

# gradlab-exercise: clip.global_norm
import torch
import torch.nn.functional as F


def global_norm(grads):
    """The L2 norm of every entry of every tensor of the list, together:

    global_norm = sqrt(Σ_i ‖g_i‖²) = sqrt(Σ_i Σ_j g_ij²)

    Shapes: grads, a list of tensors of any shapes (they differ: (784, 10), (10,), (256, 256)…). Return a
    0-dim tensor; the gradients are not changed. torch.nn.utils.get_total_norm computes this (the check
    compares yours with it): write it yourself here. TF-1: tf.global_norm(t_list).
    """
    return sum(g.norm() for g in grads)
