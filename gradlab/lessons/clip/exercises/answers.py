"""Model answers to the exercises of `gradlab clip`, as a student would write them: what the notebooks' "Your turn"
cells become when the suite runs them (scripts/notebooks.py --answers), what a teacher can hand out afterwards. The
suite checks each one with `gradlab check`, as it checks a student's file; never imported beside a submission."""

import torch


def clip_by_global_norm(grads, clip_norm):
    norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads))  # float64: a sum of many squares
    scale = clip_norm / torch.clamp(norm, min=clip_norm)
    return [g * scale.to(g.dtype) for g in grads]
