"""The exercises of `gradlab ddp`, on gradlab's side: each one's reference answer, its known mistakes (a realistic wrong
implementation and what to tell its author) and what its checks claim. Never imported beside a submission."""

from __future__ import annotations

import torch.nn.functional as F

from gradlab.lessons.ddp.exercises.harness import HARNESSES
from gradlab.practice.exercise import Checks, Mistake, norm_ratio

# ---------------------------------------------------------------------------------------------- accumulated_grad

def _acc_reference(model, x, y, sizes):
    model.zero_grad()
    B = len(x)
    for xk, yk in zip(x.split(sizes), y.split(sizes), strict=True):
        (F.cross_entropy(model(xk), yk, reduction="sum") / B).backward()  # Σ_i ℓ_i / B: any sizes
    return [p.grad for p in model.parameters()]


def _acc_no_k(model, x, y, sizes):
    model.zero_grad()
    for xk, yk in zip(x.split(sizes), y.split(sizes), strict=True):
        F.cross_entropy(model(xk), yk).backward()
    return [p.grad for p in model.parameters()]


def _acc_mean_of_means(model, x, y, sizes):
    model.zero_grad()
    for xk, yk in zip(x.split(sizes), y.split(sizes), strict=True):
        (F.cross_entropy(model(xk), yk) / len(sizes)).backward()
    return [p.grad for p in model.parameters()]


def _acc_no_zero_grad(model, x, y, sizes):
    for xk, yk in zip(x.split(sizes), y.split(sizes), strict=True):
        (F.cross_entropy(model(xk), yk, reduction="sum") / len(x)).backward()
    return [p.grad for p in model.parameters()]


ACCUMULATE = Checks(
    harness=HARNESSES["accumulated_grad"], reference=_acc_reference,
    mistakes=[
        Mistake("/K forgotten", _acc_no_k, lambda s, r: f"your gradient is {norm_ratio(s, r):.3g} times the full "
                f"batch's (K times, for K equal parts): .backward() adds the K gradients, so divide each "
                f"micro-batch's loss by K, or sum the per-sample losses and divide by B"),
        Mistake("mean of means", _acc_mean_of_means, lambda s, r: "right for equal parts, wrong for unequal ones: "
                "each micro-batch's loss was normalised by its own size and then by K, so 4 samples weigh as much "
                "as 64. Sum the per-sample losses (reduction='sum') and divide by B, the whole batch's size"),
        Mistake("no zero_grad", _acc_no_zero_grad, lambda s, r: "your gradients piled up on what .grad held "
                "before: call model.zero_grad() (or set each .grad to None) before the first backward"),
    ],
    claims={"equal": ("equal parts: your accumulated gradient ≡ one backward over the whole batch (max relative |Δ|)",
                      1e-5),
            "unequal": ("unequal parts: your accumulated gradient ≡ one backward over the whole batch (max relative "
                        "|Δ|)", 1e-5)})



# --------------------------------------------------------------------------------------------- average_gradients

def _avg_reference(grads, n_local, n_total):
    import torch.distributed as dist

    out = [g * (n_local / n_total) for g in grads]  # (n_r / B) · ḡ_r, then the sum over the workers
    for t in out:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return out


def _avg_equal_weights(grads, n_local, n_total):
    import torch.distributed as dist

    out = [g.clone() for g in grads]
    for t in out:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return [t / dist.get_world_size() for t in out]


def _avg_local(grads, n_local, n_total):
    return [g.clone() for g in grads]


def _avg_summed(grads, n_local, n_total):
    import torch.distributed as dist

    out = [g.clone() for g in grads]
    for t in out:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return out


AVERAGE = Checks(
    harness=HARNESSES["average_gradients"], reference=_avg_reference,
    mistakes=[
        Mistake("equal weights", _avg_equal_weights, lambda s, r: "you averaged the shards with equal weights "
                "(all_reduce, then / W): right for equal shards only. Weigh each worker's gradient by n_r / B "
                "before the all-reduce"),
        Mistake("no all-reduce", _avg_local, lambda s, r: "every worker returned its own gradient: call "
                "dist.all_reduce so that all of them get the same, global one"),
        Mistake("sum of means", _avg_summed, lambda s, r: "you added the workers' mean gradients without weights: "
                "the result is about W times too large. Multiply each by n_r / B before the all-reduce"),
    ],
    claims={"average": ("on real gloo workers, every worker's result ≡ the whole batch's gradient Σ_r (n_r/B)·ḡ_r "
                        "(max relative |Δ|)", 1e-12)})


CHECKS: dict[str, Checks] = {
    "accumulated_grad": ACCUMULATE,
    "average_gradients": AVERAGE,
}
