# gradlab-exercise: ddp.average_gradients
# corpus: wrong
# mistake: asks for ReduceOp.AVG (an equal-weight mean over the workers) instead of weighting each worker by n_r/B (older gloo builds also reject AVG).
# relation: right for equal shards, wrong for unequal (each worker weighted 1/R); on gloo builds without AVG it crashes instead
import torch
import torch.nn.functional as F
import torch.distributed as dist


def average_gradients(grads, n_local, n_total):
    out = [g.clone() for g in grads]
    for t in out:
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
    return out
