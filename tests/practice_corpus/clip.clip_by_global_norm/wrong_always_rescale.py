# gradlab-exercise: clip.clip_by_global_norm
# corpus: wrong
# mistake: always rescales to norm clip_norm, so small gradients are scaled UP instead of being left alone.
# relation: right when global norm ≥ clip_norm; output = clip_norm/global_norm × expected when global norm < clip_norm
import torch
import torch.nn.functional as F


def clip_by_global_norm(grads, clip_norm):
    global_norm = torch.sqrt(sum((g ** 2).sum() for g in grads))
    return [g * clip_norm / global_norm for g in grads]
