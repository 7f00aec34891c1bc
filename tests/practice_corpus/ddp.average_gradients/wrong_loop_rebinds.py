# gradlab-exercise: ddp.average_gradients
# corpus: wrong
# mistake: the loop variable is rebound (g = g * w) and all-reduced, but the function returns the original list: the result is neither scaled nor reduced.
# relation: output = this worker's own ḡ_r (input returned unchanged), not the global gradient
import torch
import torch.nn.functional as F
import torch.distributed as dist


def average_gradients(grads, n_local, n_total):
    w = n_local / n_total
    for g in grads:
        g = g * w
        dist.all_reduce(g, op=dist.ReduceOp.SUM)
    return grads
