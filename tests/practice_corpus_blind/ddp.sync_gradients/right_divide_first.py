"""gradlab exercise ddp.sync_gradients (level 1): average every parameter's .grad over the workers in place, as
DistributedDataParallel does, on real gloo workers.

Write the body of sync_gradients below, then check it:

    gradlab check sync_gradients.py
"""

# gradlab-exercise: ddp.sync_gradients
import torch
import torch.nn.functional as F


def sync_gradients(model):
    """Called on every worker of a torch.distributed job (gloo, on this machine) at the same time, after each
    worker's backward on its own shard (the shards are equal): make every p.grad the mean over the workers.

    for each parameter p:  dist.all_reduce(p.grad, op=dist.ReduceOp.SUM);  p.grad /= world size

    Shapes: model a torch.nn.Module whose parameters' .grad hold this worker's gradients. Change them in place
    and return nothing. DistributedDataParallel does this during backward ("the gradients between different
    nodes are averaged", its docstring): write it by hand here. TF-1: tf.contrib.nccl.all_sum (1.0 to 1.12)
    summed across GPUs; Horovod's hvd.allreduce averages by default.
    """
    import torch.distributed as dist
    n = dist.get_world_size()
    for param in model.parameters():
        if param.grad is None:
            continue
        param.grad.div_(n)
        dist.all_reduce(param.grad)
