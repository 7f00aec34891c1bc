# gradlab-exercise: clip.clip_by_global_norm
# corpus: right
# mistake: none (nearly): reuses torch.nn.utils.clip_grad_norm_ on throw-away parameters; note clip_grad_norm_ divides by (norm + 1e-6), so the clipped result differs from the formula by a relative ~1e-6/norm — a fair grader's tolerance should absorb it.
# relation: equals expected within relative 1e-6/global_norm (clip_grad_norm_'s +1e-6)
import torch
import torch.nn.functional as F


def clip_by_global_norm(grads, clip_norm):
    params = []
    for g in grads:
        p = torch.nn.Parameter(torch.empty_like(g))
        p.grad = g.detach().clone()
        params.append(p)
    torch.nn.utils.clip_grad_norm_(params, clip_norm)
    return [p.grad for p in params]
