# gradlab-exercise: clip.clip_by_global_norm
# corpus: wrong
# mistake: takes the mean of the squared entries (an RMS) instead of their sum, so the 'norm' shrinks with the number of entries.
# relation: global_norm underestimated by sqrt(number of entries): clips too little or not at all
import torch
import torch.nn.functional as F


def clip_by_global_norm(grads, clip_norm):
    flat = torch.cat([g.reshape(-1) for g in grads])
    global_norm = flat.pow(2).mean().sqrt()
    scale = clip_norm / max(global_norm.item(), clip_norm)
    return [g * scale for g in grads]
