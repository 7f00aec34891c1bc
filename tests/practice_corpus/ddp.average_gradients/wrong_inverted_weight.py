# gradlab-exercise: ddp.average_gradients
# corpus: wrong
# mistake: weights each worker by B/n_r instead of n_r/B (the fraction written upside down).
# relation: output = Σ_r (B/n_r)·ḡ_r; = R² × expected for equal shards
import torch
import torch.nn.functional as F
import torch.distributed as dist


def average_gradients(grads, n_local, n_total):
    scale = n_total / n_local
    out = []
    for g in grads:
        t = g * scale
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        out.append(t)
    return out
