"""Model answers to the exercises of `gradlab clip`, as a student would write them: what the notebooks' "Your turn"
cells become when the suite runs them (scripts/notebooks.py --answers), what a teacher can hand out afterwards. The
suite checks each one with `gradlab check`, as it checks a student's file; never imported beside a submission."""

import torch


def clip_by_global_norm(grads, clip_norm):
    norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads))  # float64: a sum of many squares
    scale = clip_norm / torch.clamp(norm, min=clip_norm)
    return [g * scale.to(g.dtype) for g in grads]


def global_norm(grads):
    return torch.sqrt(sum((g.double() ** 2).sum() for g in grads)).to(grads[0].dtype)  # float64: many squares


def clip_across_ranks(grads, clip_norm):
    import torch.distributed as dist

    s = sum((g.double() ** 2).sum() for g in grads).reshape(1)  # this rank's Σ‖g‖²
    dist.all_reduce(s, op=dist.ReduceOp.SUM)  # Σ over the ranks: the squared global norm, on every rank
    scale = clip_norm / max(float(s.sqrt()), clip_norm)
    return [g * scale for g in grads]
