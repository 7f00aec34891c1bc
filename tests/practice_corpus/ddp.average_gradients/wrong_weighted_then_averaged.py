# gradlab-exercise: ddp.average_gradients
# corpus: wrong
# mistake: weights by n_r/B correctly, then also divides by the world size after the sum (averaged twice).
# relation: output = (1/R) × expected
import torch
import torch.nn.functional as F
import torch.distributed as dist


def average_gradients(grads, n_local, n_total):
    world = dist.get_world_size()
    out = []
    for g in grads:
        t = g * (n_local / n_total)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        out.append(t / world)
    return out
