# gradlab-exercise: clip.clip_by_global_norm
# corpus: wrong
# mistake: measures the global size with the L1 norm (sum of absolute values) instead of the L2 norm.
# relation: scale = clip_norm/‖g‖₁ instead of clip_norm/‖g‖₂ when clipping (clips too much); right only when no clipping under either
import torch
import torch.nn.functional as F


def clip_by_global_norm(grads, clip_norm):
    global_norm = sum(g.abs().sum() for g in grads)
    if global_norm > clip_norm:
        return [g * (clip_norm / global_norm) for g in grads]
    return [g.clone() for g in grads]
