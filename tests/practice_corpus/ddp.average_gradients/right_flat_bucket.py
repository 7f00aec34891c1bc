# gradlab-exercise: ddp.average_gradients
# corpus: right
# mistake: none: flattens every gradient into one bucket, one all_reduce of n_r·ḡ_r, divides by B, and splits back (like DDP's buckets).
# relation: equals expected (up to float rounding: multiplying by n_r then dividing by B rounds differently from multiplying by n_r/B)
import torch
import torch.nn.functional as F
import torch.distributed as dist


def average_gradients(grads, n_local, n_total):
    flat = torch.cat([g.reshape(-1) for g in grads]) * n_local
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    flat /= n_total
    out, i = [], 0
    for g in grads:
        out.append(flat[i:i + g.numel()].view_as(g))
        i += g.numel()
    return out
