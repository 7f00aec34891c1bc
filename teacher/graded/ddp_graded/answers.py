"""The model answer of ddp_graded.accumulate, as a student would write it (the teacher's, never given to students)."""

import torch.nn.functional as F


def accumulate(model, x, y, sizes):
    model.zero_grad()
    counted = int((y != -100).sum())  # M: the targets that count, in the whole batch
    for xk, yk in zip(x.split(sizes), y.split(sizes), strict=True):
        (F.cross_entropy(model(xk), yk, reduction="sum") / counted).backward()  # Σ_{i in k} ℓ_i / M
    return [p.grad for p in model.parameters()]
