# gradlab-exercise: ddp.average_gradients
# corpus: wrong
# mistake: divides by B but forgets to multiply by the worker's own n_r first.
# relation: output = Σ_r ḡ_r / B; = (R/B) × expected for equal shards, wrongly weighted for unequal
import torch
import torch.nn.functional as F
import torch.distributed as dist


def average_gradients(grads, n_local, n_total):
    result = []
    for g in grads:
        t = g / n_total
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        result.append(t)
    return result
