# gradlab-exercise: clip.clip_by_global_norm
# corpus: right
# mistake: none: concatenates every tensor into one vector and takes its norm; scale via clamp(max=1).
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def clip_by_global_norm(grads, clip_norm):
    flat = torch.cat([g.flatten() for g in grads])
    norm = flat.norm()
    scale = (clip_norm / norm).clamp(max=1.0)
    return [g * scale for g in grads]
