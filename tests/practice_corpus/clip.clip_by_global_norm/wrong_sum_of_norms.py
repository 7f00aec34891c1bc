# gradlab-exercise: clip.clip_by_global_norm
# corpus: wrong
# mistake: adds the tensors' norms (Σ‖g_i‖) instead of taking sqrt(Σ‖g_i‖²): the global norm is overestimated.
# relation: right when no clipping is needed under either norm or only one tensor is non-zero; otherwise clipped too much (scale smaller than expected)
import torch
import torch.nn.functional as F


def clip_by_global_norm(grads, clip_norm):
    global_norm = sum(g.norm() for g in grads)
    scale = clip_norm / max(global_norm, clip_norm)
    return [g * scale for g in grads]
