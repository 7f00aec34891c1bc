# gradlab-exercise: ddp.average_gradients
# corpus: wrong
# mistake: computes the weight with integer division n_local // n_total, which is 0 for every worker.
# relation: output = 0 (all zeros) for every shard smaller than B
import torch
import torch.nn.functional as F
import torch.distributed as dist


def average_gradients(grads, n_local, n_total):
    weight = n_local // n_total
    out = []
    for g in grads:
        t = weight * g
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        out.append(t)
    return out
