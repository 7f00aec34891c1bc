# gradlab-exercise: clip.clip_by_global_norm
# corpus: wrong
# mistake: scales the caller's tensors in place (g.mul_) and returns them, instead of returning new tensors: the inputs are changed.
# relation: returned values = expected; input tensors mutated (returned list aliases them)
import torch
import torch.nn.functional as F


def clip_by_global_norm(grads, clip_norm):
    total = 0.0
    for g in grads:
        total += g.pow(2).sum().item()
    global_norm = total ** 0.5
    if global_norm > clip_norm:
        for g in grads:
            g.mul_(clip_norm / global_norm)
    return grads
