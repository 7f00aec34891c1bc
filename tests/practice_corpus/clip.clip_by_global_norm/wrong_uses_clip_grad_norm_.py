# gradlab-exercise: clip.clip_by_global_norm
# corpus: wrong
# mistake: calls torch.nn.utils.clip_grad_norm_ (on throw-away parameters), the library function the exercise asks you to write (issue #27: a failed check of its own); its values match within clip_grad_norm_'s +1e-6.
# relation: the values are right; the check 'does not use clip_grad_norm_' fails, naming the call
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
