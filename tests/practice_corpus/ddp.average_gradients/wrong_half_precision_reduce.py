# gradlab-exercise: ddp.average_gradients
# corpus: wrong
# mistake: reduces each gradient in float32 (g.float()), then returns it as the caller's dtype.
# relation: right weights, every number rounded to float32 where float64 is expected
import torch
import torch.distributed as dist


def average_gradients(grads, n_local, n_total):
    result = []
    for g in grads:
        t = g.float() * n_local / n_total
        dist.all_reduce(t)
        result.append(t.double())
    return result
