# gradlab-exercise: clip.clip_by_global_norm
# corpus: right
# mistake: none: norm of the per-tensor norms; an explicit if, and clones when nothing is clipped.
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def clip_by_global_norm(grads, clip_norm):
    norms = torch.stack([torch.linalg.norm(g.reshape(-1)) for g in grads])
    global_norm = torch.linalg.norm(norms)
    if global_norm <= clip_norm:
        return [g.clone() for g in grads]
    return [g / global_norm * clip_norm for g in grads]
