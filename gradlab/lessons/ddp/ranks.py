"""gradlab ddp, on every rank: what each worker process runs once the process group exists (gradlab.kit.distributed
starts or joins it and calls rank_work on every rank).

LOCKSTEP. Every collective here (all_reduce, broadcast, any_rank, and DDP's all-reduces inside backward) is a
meeting: each rank must make the same calls, in the same order, the same number of times. A rank that skips one
or adds one, for instance by branching on something only it knows (its shard, its own gradient's norm), leaves the
others waiting until --timeout. Every branch and loop below depends only on what all ranks share (the config, the
step number) or on a value all ranks just agreed on through a collective (any_rank)."""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel

from gradlab.kit.exercise import relative_to_largest
from gradlab.kit.training import cross_entropy, global_norm, torch_clip
from gradlab.lessons.ddp.batches import (
    Batches,
    ReluSigns,
    full_batch_grads,
    new_model,
    same_signs,
    shard_sizes,
    summed_cross_entropy,
)
from gradlab.lessons.ddp.settings import Config


def all_reduce_sum(tensors: list[torch.Tensor], comm: list[float] | None = None) -> list[torch.Tensor]:
    """all_reduce(SUM) of a list of tensors as one flat buffer (one call, like one DDP bucket): every worker ends
    with the sum over workers. COMM, when given, collects the seconds spent in the call."""
    buffer = torch.cat([t.reshape(-1) for t in tensors])
    start = time.perf_counter()
    dist.all_reduce(buffer, op=dist.ReduceOp.SUM)
    if comm is not None:
        comm.append(time.perf_counter() - start)
    return [b.view_as(t) for b, t in zip(buffer.split([t.numel() for t in tensors]), tensors, strict=True)]


def manual_step(model, x, y, batch: int, clip_norm: float | None, comm: list[float]) -> torch.Tensor:
    """One data-parallel gradient by hand: this worker's share of the mean loss, all-reduced, written into .grad
    (the optimizer's step() follows, as after backward())."""
    params = list(model.parameters())
    loss = summed_cross_entropy(model(x), y) / batch  # Σ_{i in my shard} ℓ_i / B: my share of the mean
    grads = all_reduce_sum(list(torch.autograd.grad(loss, params)), comm)  # Σ over workers = g, on every worker
    for p, g in zip(params, grads, strict=True):
        p.grad = g
    if clip_norm is not None:  # reduce, then clip: every worker clips the same g the same way
        torch.nn.utils.clip_grad_norm_(params, clip_norm)
    return loss.detach()


class CommStats:
    """What a DDP model's comm hook saw: all-reduce calls, bytes, and seconds from call to completion."""

    def __init__(self) -> None:
        self.calls, self.bytes, self.seconds = 0, 0, 0.0


def counting_hook(stats, bucket):  # no annotations: DDP checks them, and `from __future__` makes them strings
    """DDP's own all-reduce (divide by W, all_reduce SUM), counted: a comm hook sees every bucket DDP sends
    (stats: CommStats, bucket: dist.GradBucket; returns the future of the reduced bucket)."""
    stats.calls += 1
    stats.bytes += bucket.buffer().numel() * bucket.buffer().element_size()
    start = time.perf_counter()

    def done(fut: torch.futures.Future) -> torch.Tensor:
        stats.seconds += time.perf_counter() - start
        return fut.value()

    return allreduce_hook(None, bucket).then(done)


def ddp_step(ddp, x, y, batch: int, world: int, parts: int, no_sync: bool) -> torch.Tensor:
    """One gradient of a DistributedDataParallel model over this worker's shard in PARTS micro-batches, into .grad.
    DDP divides by W before it sums, so each micro-batch's loss is Σ ℓ_i · W / B. NO_SYNC: only the last backward
    all-reduces."""
    ddp.zero_grad()
    total = torch.zeros((), dtype=x.dtype, device=x.device)
    split = shard_sizes(len(x), parts)
    for k, (xk, yk) in enumerate(zip(x.split(split), y.split(split), strict=True)):
        quiet = ddp.no_sync() if no_sync and k < parts - 1 else contextlib.nullcontext()
        with quiet:  # under no_sync(): backward adds into .grad locally, no all-reduce
            loss = summed_cross_entropy(ddp(xk), yk) * world / batch
            loss.backward()  # otherwise DDP all-reduces the gradient buckets during this backward
        total += loss.detach() / world
    return total


def norm_reduced_twice(grads: list[torch.Tensor]) -> tuple[float, float]:
    """(‖g‖ on this worker, the norm after a second, needless reduction: sqrt(all_reduce(SUM, ‖g‖²)) = √W·‖g‖)."""
    norm = global_norm(grads)  # grads are already all-reduced: the same on every worker
    squares = (norm ** 2).reshape(1)
    dist.all_reduce(squares, op=dist.ReduceOp.SUM)  # right for sharded parameters, wrong for replicated ones
    return float(norm), float(squares.sqrt())


def sharded_norm(grads: list[torch.Tensor], rank: int, world: int) -> float:
    """‖g‖ as FSDP-style sharding computes it, each worker holding only its 1/W slice of the flat gradient: this
    worker's squared norm of its slice, all-reduced, sqrt(Σ_r ‖g_r‖²). The reduction norm_reduced_twice makes by
    mistake on replicated gradients is the right one here."""
    mine = torch.tensor_split(torch.cat([g.reshape(-1) for g in grads]), world)[rank]  # my slice, as FSDP shards
    squares = (torch.linalg.vector_norm(mine, dtype=torch.float64) ** 2).reshape(1)  # ‖g_r‖²
    dist.all_reduce(squares, op=dist.ReduceOp.SUM)  # Σ_r ‖g_r‖² = ‖g‖²: the slices do not overlap
    return float(squares.sqrt())


def any_rank(flag: bool, device: torch.device) -> bool:
    """True on every worker when FLAG is true on any of them (all_reduce with MAX): how the ranks agree on a branch
    that depends on what each saw."""
    t = torch.tensor([float(flag)], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())


@dataclass(frozen=True)
class Way:
    """One way the workers compute a step's gradient; each is trained in lockstep with one process's."""

    key: str  # its name in the result
    label: str  # in the speed table and the progress bar (K: the number of micro-batches)
    ddp: bool  # through DistributedDataParallel, else a hand-written all_reduce
    clip: bool = False  # all-reduce, then clip to --clip-norm
    micro_batches: bool = False  # accumulate each shard in K micro-batches
    no_sync: bool = False  # ... inside no_sync() but for the last


WAYS = (Way("manual", "manual all_reduce", ddp=False),
        Way("manual+clip", "manual, then clip", ddp=False, clip=True),
        Way("ddp", "DDP", ddp=True),
        Way("ddp sync every micro-batch", "DDP K parts, sync each", ddp=True, micro_batches=True),
        Way("ddp no_sync", "DDP K parts, no_sync", ddp=True, micro_batches=True, no_sync=True))


def rank_work(rank: int, world: int, device: torch.device, config: Config, batches: Batches,
              report: Callable = lambda *a: None) -> dict:
    """Everything one worker measures. Runs on every rank of the job, in lockstep (see the module docstring)."""
    batches = batches.to(device)
    B = config.batch_size
    sizes = shard_sizes(B, world)
    lo, n = sum(sizes[:rank]), sizes[rank]
    mine = slice(lo, lo + n)
    out = {"rank": rank, "shard": n, "pid": os.getpid()}

    # 1. One global batch: shard gradients, all-reduced two ways, against the full-batch gradient. The first batch
    # on which every shard's forward pass agrees with the whole batch's on every ReLU sign (see ReluSigns).
    model = new_model(config, device)
    params = list(model.parameters())
    signs = ReluSigns(model)
    for s in range(len(batches)):
        x, y = batches[s]
        full = full_batch_grads(model, x, y)  # g, computed here only to check against
        whole = [t[mine] for t in signs.take()]
        shard_mean = list(torch.autograd.grad(cross_entropy(model(x[mine]), y[mine]), params))  # ḡ_r
        if not any_rank(not same_signs(signs.take(), whole), device):  # LOCKSTEP: all ranks stop at the same s
            break
    out["one_batch_step"] = s + 1
    naive = [t / world for t in all_reduce_sum(shard_mean)]  # all_reduce(SUM, ḡ_r) / W
    weighted = all_reduce_sum([t * (n / B) for t in shard_mean])  # all_reduce(SUM, (n_r/B)·ḡ_r)
    out["naive_vs_full"] = relative_to_largest(naive, full)
    out["weighted_vs_full"] = relative_to_largest(weighted, full)
    out["norm"], out["norm_twice"] = norm_reduced_twice(weighted)
    out["norm_sharded"], out["norm_single"] = sharded_norm(weighted, rank, world), float(global_norm(full))
    clip_then_reduce = all_reduce_sum([t * (n / B) for t in torch_clip(shard_mean, config.clip_norm)[1]])
    reduce_then_clip = torch_clip(weighted, config.clip_norm)[1]
    out["shard_norm"] = float(global_norm(shard_mean))
    out["clip_order"] = relative_to_largest(clip_then_reduce, reduce_then_clip)
    out["reduce_then_clip_vs_single"] = relative_to_largest(reduce_then_clip, torch_clip(full, config.clip_norm)[1])

    # 2. Training, in lockstep with one process on the whole batch: at every step each way starts from the
    # reference's weights, computes its gradient (all-reduce included), and is compared with the reference's; then
    # the reference steps. (Left to run freely, float32 runs drift apart: see the lesson's docstring.)
    K = config.micro_batches
    out["runs"] = {}
    for i, way in enumerate(WAYS):  # LOCKSTEP: every rank runs every way, in this order
        label = way.label.replace("K ", f"{K} ")
        out["runs"][way.key] = lockstep(config, batches, mine, device, world, way, report=lambda s, i=i, label=label:
                                        report(f"workers: {label} step {s}/{config.steps}", i * config.steps + s,
                                               len(WAYS) * config.steps))
    return out


def lockstep(config: Config, batches: Batches, mine: slice, device, world: int, way: Way, report: Callable) -> dict:
    """WAY's gradients against one process's on the whole batch, from the same weights at every step; also how long
    a step took, how long it spent communicating, and (DDP) what its comm hook counted."""
    B, K = config.batch_size, config.micro_batches
    ref = new_model(config, device)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=config.lr)
    model = new_model(config, device)
    stats = CommStats()
    if way.ddp:
        model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
        model.register_comm_hook(stats, counting_hook)
    target = model.module if way.ddp else model
    run_signs, ref_signs = ReluSigns(target), ReluSigns(ref)
    worst, worst_rank0, flips = math.nan, 0.0, 0
    comm, losses, wall = [], [], 0.0
    for s in range(config.steps):  # LOCKSTEP: the same number of steps on every rank
        x, y = batches[s]
        with torch.no_grad():  # this run starts the step from the reference's weights
            for p, q in zip(target.parameters(), ref.parameters(), strict=True):
                p.copy_(q)
        start = time.perf_counter()
        if way.ddp:
            losses.append(ddp_step(model, x[mine], y[mine], B, world, K if way.micro_batches else 1, way.no_sync))
        else:
            losses.append(manual_step(model, x[mine], y[mine], B, config.clip_norm if way.clip else None, comm))
        wall += time.perf_counter() - start
        got = torch.cat([p.grad.reshape(-1) for p in target.parameters()])
        ref_opt.zero_grad()
        cross_entropy(ref(x), y).backward()  # the reference: one process, the whole batch
        if way.clip:
            torch.nn.utils.clip_grad_norm_(ref.parameters(), config.clip_norm)
        if any_rank(not same_signs(run_signs.take(), [t[mine] for t in ref_signs.take()]), device):
            flips += 1  # a ReLU flipped on some worker: the difference is not rounding; counted, left out
        else:
            diff = relative_to_largest(got, [p.grad for p in ref.parameters()])
            worst = diff if math.isnan(worst) else max(worst, diff)
        rank0 = got.clone()
        dist.broadcast(rank0, src=0)  # every worker's gradient against rank 0's
        worst_rank0 = max(worst_rank0, relative_to_largest(got, rank0))
        ref_opt.step()
        report(s + 1)
    loss = torch.stack(losses)
    dist.all_reduce(loss)  # Σ over workers of their shares = each step's full-batch mean loss
    if not way.ddp:  # the hand-written step all-reduces the whole gradient in one call
        stats.calls, stats.seconds = len(comm), sum(comm)
        stats.bytes = len(comm) * got.numel() * got.element_size()
    return {"vs_single": worst, "flips": flips, "vs_rank0": worst_rank0, "wall_s": wall, "comm_s": stats.seconds,
            "calls": stats.calls, "bytes": stats.bytes, "loss": loss.tolist()}
