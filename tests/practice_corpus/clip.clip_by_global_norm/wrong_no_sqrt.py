# gradlab-exercise: clip.clip_by_global_norm
# corpus: wrong
# mistake: forgets the square root: uses Σ‖g_i‖² as the global norm.
# relation: right only while ‖g‖² ≤ clip_norm (nothing clipped); when clipping, scale = clip_norm/‖g‖² instead of clip_norm/‖g‖
import torch
import torch.nn.functional as F


def clip_by_global_norm(grads, clip_norm):
    global_norm = sum(torch.sum(g * g) for g in grads)
    scale = clip_norm / torch.clamp(global_norm, min=clip_norm)
    return [g * scale for g in grads]
