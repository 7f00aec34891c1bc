# gradlab-exercise: ddp.average_gradients
# corpus: wrong
# mistake: packs the gradients into one float32 bucket to save bandwidth (as people say DDP does), then casts back.
# relation: right weights, but every number is rounded to float32 (about 1e-7 relative) where float64 is expected
import torch
import torch.distributed as dist


def average_gradients(grads, n_local, n_total):
    bucket = torch.cat([g.flatten() for g in grads]).to(torch.float32) * (n_local / n_total)
    dist.all_reduce(bucket, op=dist.ReduceOp.SUM)
    out, start = [], 0
    for g in grads:
        out.append(bucket[start:start + g.numel()].reshape(g.shape).to(g.dtype))
        start += g.numel()
    return out
