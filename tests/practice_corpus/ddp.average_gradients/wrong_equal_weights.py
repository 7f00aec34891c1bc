# gradlab-exercise: ddp.average_gradients
# corpus: wrong
# mistake: averages the workers' gradients with equal weights (sum / world size, as Horovod does), ignoring that the shards have different sizes.
# relation: right for equal shards, wrong for unequal (each worker weighted 1/R instead of n_r/B)
import torch
import torch.nn.functional as F
import torch.distributed as dist


def average_gradients(grads, n_local, n_total):
    world = dist.get_world_size()
    out = []
    for g in grads:
        t = g.clone()
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        out.append(t / world)
    return out
