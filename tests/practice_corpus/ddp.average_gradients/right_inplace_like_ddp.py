# gradlab-exercise: ddp.average_gradients
# corpus: right
# mistake: none: scales and all-reduces the given tensors in place (as DDP does to param.grad) and returns the same list; the docstring only asks for a list of the same shapes.
# relation: equals expected (up to float rounding); the input tensors hold the result too
import torch
import torch.nn.functional as F
import torch.distributed as dist


def average_gradients(grads, n_local, n_total):
    for g in grads:
        g.mul_(n_local / n_total)
        dist.all_reduce(g, op=dist.ReduceOp.SUM)
    return grads
