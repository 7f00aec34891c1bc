# gradlab-exercise: clip.clip_by_global_norm
# corpus: wrong
# mistake: uses min(global_norm, clip_norm) in the denominator instead of max.
# relation: scale ≥ 1 always: clipped case returns the gradients unchanged; unclipped case scales them up by clip_norm/global_norm
import torch
import torch.nn.functional as F


def clip_by_global_norm(grads, clip_norm):
    global_norm = torch.sqrt(sum(g.pow(2).sum() for g in grads))
    return [g * clip_norm / torch.minimum(global_norm, torch.tensor(clip_norm)) for g in grads]
