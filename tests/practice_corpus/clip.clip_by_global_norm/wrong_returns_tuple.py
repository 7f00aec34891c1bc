# gradlab-exercise: clip.clip_by_global_norm
# corpus: wrong
# mistake: copies TF's signature and returns (clipped, global_norm) instead of just the list.
# relation: first element = expected list; the return value has the wrong structure (tuple of list and norm)
import torch
import torch.nn.functional as F


def clip_by_global_norm(grads, clip_norm):
    global_norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    scale = clip_norm / torch.maximum(global_norm, torch.as_tensor(clip_norm, dtype=global_norm.dtype))
    clipped = [g * scale for g in grads]
    return clipped, global_norm
