# gradlab-exercise: ddp.average_gradients
# corpus: right
# mistake: none: does not trust n_total — it all-reduces the sample counts too, and divides the summed n_r·ḡ_r by the reduced count (float64 for the count).
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F
import torch.distributed as dist


def average_gradients(grads, n_local, n_total):
    count = torch.tensor([float(n_local)], dtype=torch.float64)
    dist.all_reduce(count)
    out = []
    for g in grads:
        t = g * n_local
        dist.all_reduce(t)
        out.append(t / count.item())
    return out
