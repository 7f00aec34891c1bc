# gradlab-exercise: clip.clip_by_global_norm
# corpus: wrong
# mistake: clips each tensor by its own norm (tf.clip_by_norm per tensor) instead of one scale from the global norm: the direction changes.
# relation: right when global norm ≤ clip_norm or the list has one tensor; otherwise each tensor gets its own scale (clips too little, direction changes)
import torch
import torch.nn.functional as F


def clip_by_global_norm(grads, clip_norm):
    out = []
    for g in grads:
        n = g.norm()
        out.append(g * clip_norm / max(n, clip_norm))
    return out
