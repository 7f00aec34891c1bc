"""The model answer to clip_graded.clip_by_norm: the suite checks it with gradlab check; the teacher hands it out
after the exam (it is in no student's gradlab)."""

import torch


def clip_by_norm(t, clip_norm, axes):
    n = torch.linalg.vector_norm(t, dim=axes, keepdim=True)  # one norm per slice; its gradient at 0 is 0, not NaN
    return t * (clip_norm / torch.clamp(n, min=clip_norm))  # slices at most clip_norm long are left as they are
