# gradlab-exercise: ddp.average_gradients
# corpus: wrong
# mistake: uses dist.reduce to rank 0 instead of all_reduce, so only worker 0 ends with the global gradient.
# relation: right on rank 0 only; other ranks return a partial sum / their own weighted gradient
import torch
import torch.nn.functional as F
import torch.distributed as dist


def average_gradients(grads, n_local, n_total):
    out = []
    for g in grads:
        t = g * n_local / n_total
        dist.reduce(t, dst=0, op=dist.ReduceOp.SUM)
        out.append(t)
    return out
