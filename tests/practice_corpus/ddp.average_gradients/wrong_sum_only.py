# gradlab-exercise: ddp.average_gradients
# corpus: wrong
# mistake: all-reduces the mean gradients with SUM and stops there: the sum of R means, not their weighted average.
# relation: output = Σ_r ḡ_r; = R × expected for equal shards
import torch
import torch.nn.functional as F
import torch.distributed as dist


def average_gradients(grads, n_local, n_total):
    out = [g.clone() for g in grads]
    for t in out:
        dist.all_reduce(t)
    return out
