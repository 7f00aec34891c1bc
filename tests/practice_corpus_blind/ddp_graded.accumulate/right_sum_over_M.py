"""gradlab exercise ddp_graded.accumulate (level 3): the gradient of one batch's mean cross-entropy over its
counted targets (padding −100 left out), accumulated over micro-batches.

Write the body of accumulate below, then hand it in as ddp_accumulate.py: your teacher checks it with the course's own checks,

    gradlab check ddp_accumulate.py --course course.toml
"""

# gradlab-exercise: ddp_graded.accumulate
import torch
import torch.nn.functional as F


def accumulate(model, x, y, sizes):
    """The whole batch's loss is F.cross_entropy(model(x), y): its mean over the M targets that count. A
    target equal to −100 is padding (F.cross_entropy's ignore_index): it adds nothing and is not counted.

    g = (1/M) Σ_{i: y_i ≠ −100} ∇ℓ_i         M = the number of targets y_i ≠ −100 in the whole batch

    Compute g micro-batch by micro-batch, as when the whole batch does not fit in memory: run the model on each
    part x.split(sizes) on its own (no forward pass may see more samples than the largest part) and call
    .backward() for each, which adds into .grad. The parts hold different numbers of counted targets, and one
    may hold padding only.

    Shapes: model a torch.nn.Module, float64 (its .grad may hold anything on entry); x (B, 20); y (B,) int64,
    class numbers 0 to 4 or −100; sizes a list of K part sizes that add up to B (they may differ). Return
    [p.grad for p in model.parameters()] after the last part. The check runs it on equal and unequal parts,
    a part of padding only, one part, and the same batch without and with padding.
    """
    for p in model.parameters():
        p.grad = None
    M = (y != -100).sum()
    for xk, yk in zip(x.split(sizes), y.split(sizes)):
        loss = F.cross_entropy(model(xk), yk, ignore_index=-100, reduction='sum') / M
        loss.backward()
    return [p.grad for p in model.parameters()]
