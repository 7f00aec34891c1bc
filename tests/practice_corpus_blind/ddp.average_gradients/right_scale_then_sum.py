"""gradlab exercise ddp.average_gradients (level 3): the global gradient from uneven shards with
torch.distributed.all_reduce, run on real gloo workers.

Write the body of average_gradients below, then check it:

    gradlab check average_gradients.py
"""

# gradlab-exercise: ddp.average_gradients
import torch
import torch.nn.functional as F


def average_gradients(grads, n_local, n_total):
    """Called on every worker of a torch.distributed job (gloo, on this machine) at the same time. Each
    worker holds ḡ_r, the mean gradient of its own shard of n_r samples; return g, the mean gradient of the
    whole batch of B samples, on every worker:

    g = Σ_r (n_r / B) · ḡ_r          dist.all_reduce(t, op=dist.ReduceOp.SUM) adds t over the workers

    Shapes: grads, a list of tensors (this worker's ḡ_r); n_local = n_r; n_total = B. The shards may differ
    (34, 33, 33). Return a list of tensors of the same shapes. TF-1 had all-reduce too
    (tf.contrib.nccl.all_sum from 1.0, summing across GPUs; tf.contrib.distribute.MirroredStrategy from 1.8),
    and Horovod's hvd.allreduce averages by default: equal weights, right for equal shards only.
    """
    import torch.distributed as dist
    out = []
    for g in grads:
        t = g * (n_local / n_total)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        out.append(t)
    return out
