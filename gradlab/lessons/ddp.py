"""One big batch's gradient, split: gradient accumulation and data-parallel all-reduce on torch.distributed.

The gradient of the mean loss over a global batch of B samples is

    g = (1/B) · Σ_i ∇ℓ_i

Split the batch into parts of n_1 … n_K samples (micro-batches one after another, or shards on W workers at once)
and call ḡ_k = (1/n_k) · Σ_{i in part k} ∇ℓ_i a part's mean gradient. Then, for any sizes,

    g = Σ_k (n_k / B) · ḡ_k

Accumulation, one process: `.backward()` adds into `.grad`, so K backward calls add K gradients.

    loss_k / K, equal parts          Σ_k ḡ_k / K = g                  (n_k / B = 1/K)
    loss_k, the /K forgotten         Σ_k ḡ_k     = K · g              (a K× larger step)
    loss_k / K, unequal parts        Σ_k ḡ_k / K ≠ g                  (4 samples weigh as much as 64)
    Σ_i ℓ_i / B, any parts           Σ_k Σ_{i in k} ∇ℓ_i / B = g      (sum, then divide by the global count)

The third line is a real bug of large training libraries: each micro-batch's loss normalised by its own size
instead of by the number of samples in the whole batch.

Data parallel, W workers, shard r holds n_r samples. `all_reduce(t, SUM)` adds t over the workers and leaves the
sum on every one of them:

    all_reduce(SUM, ḡ_r) / W         = g   when the shards are equal
    all_reduce(SUM, (n_r / B) · ḡ_r) = g   for any shards

`DistributedDataParallel` does this inside `backward()`: it divides each gradient by W and all-reduces buckets of
them while backward still runs. So W workers take exactly the steps one process takes with the whole batch.

Clipping must see the global gradient: clip(all_reduce(ḡ_r)) = clip(g), but all_reduce(clip(ḡ_r)) ≠ clip(g).
After the all-reduce every worker holds the same g, hence the same ‖g‖: there is nothing left to reduce. Reducing
the norm again (right when each worker holds only a slice of the parameters, as in FSDP; wrong here) adds W equal
squares:

    sqrt(Σ_r ‖g‖²) = √W · ‖g‖

`no_sync()`: with DDP, accumulating K micro-batches all-reduces after each of them. Inside `with ddp.no_sync():`
backward only adds locally; the K-th backward all-reduces the sum: the same gradient, K times fewer bytes sent.

Every equality is checked where it lives: at each training step, from the same weights. Left to train on their
own, two float32 runs that add the same numbers in a different order drift apart: the last bits differ, and sooner
or later a ReLU input sitting at 0 flips sign (after 30 steps: 1 seed in 20 for loss_k/K accumulation, 6 in 20
counting the data-parallel runs, by up to 7e-4; none in float64). The accumulation table shows that free-running
difference; it is not a claim. Even a single step can do it: a forward pass over 12 samples and one over 100 run
different matrix kernels, and a ReLU input within rounding of 0 may land on opposite sides. Such a step is
detected (ReluSigns: the sign of every ReLU input of every sample, in both computations), left out of the
equality claims, and counted.

gradlab starts the W workers itself (torch.multiprocessing, gloo on 127.0.0.1), or joins the job when torchrun
started it (`OMP_NUM_THREADS=1 torchrun --standalone --nproc-per-node 2 -m gradlab ddp`), on one machine or several.

Words the output uses:
  * micro-batch: one of the K parts a global batch is cut into, to fit memory; their gradients are accumulated.
  * worker, rank, world size W: each worker is a separate process with its own copy of the model; its rank is
    its number (0 … W−1); rank 0 alone prints and writes files.
  * shard: the slice of each global batch one worker computes on (n_r samples on rank r).
  * all-reduce: a collective call every worker makes at the same time; each sends its tensor and all receive the
    sum. Collectives must be called by every rank in the same order, or the job waits forever (--timeout).
  * backend: the library that moves the tensors, gloo (CPU, TCP sockets) or nccl (between NVIDIA GPUs).
  * rendezvous: how the workers find each other before the first collective: an address and port (here
    127.0.0.1 and a free port) where rank 0 listens and the others connect.
  * DDP (DistributedDataParallel): the PyTorch wrapper that all-reduces the gradients inside backward().
  * bucket: DDP packs gradients into buckets of about 25 MB and all-reduces each one as soon as backward has
    filled it, overlapping communication with computation.
  * no_sync(): a DDP context manager in which backward only accumulates locally, without all-reducing.
  * ReLU flip: a ReLU input so close to 0 that the two computations put it on opposite sides; that step's
    gradients then differ by more than rounding, so it is left out of the equality claims and counted.
  * comm: the time a step spends in communication (all-reduce), as opposed to computing.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

from gradlab import distributed
from gradlab.errors import GradlabError, check, check_positive
from gradlab.result import Claim, Curve, Result, Table
from gradlab.training import batch_orders, cross_entropy, global_norm, make_model, torch_clip

DTYPES = {"float32": torch.float32, "float64": torch.float64}
# An equivalence holds to rounding: relative to the largest number compared. A "≠" claim needs a difference far
# above rounding in either dtype.
TOLERANCE = {"float32": 1e-6, "float64": 1e-12}
DIFFERS = 1e-4
MAX_STEPS = 1_000_000
MAX_BATCH = 10_000  # a global batch larger than the bundled sample's training images would repeat images

# The code `--explain` shows beside the math, read from this file at run time.
EXPLAIN = ("micro_batch_sizes", "accumulate", "all_reduce_sum", "manual_step", "ddp_step", "counting_hook",
           "norm_reduced_twice")


@dataclass
class Config:
    """Settings of `gradlab ddp`."""

    workers: int = 2  # processes gradlab starts (torchrun's world size when torchrun started it)
    micro_batches: int = 4  # K: the global batch accumulated in K parts
    uneven: bool = False  # micro-batches of unequal sizes (64/32/4 for a batch of 100 in 3)
    batch_size: int = 100  # B: the global batch of one step
    steps: int = 30  # optimizer steps of every training run
    lr: float = 0.1  # SGD learning rate
    clip_norm: float = 0.1  # for clip-then-reduce vs reduce-then-clip; below the gradients' norms on purpose
    dtype: str = "float32"  # float64 shows the equalities at rounding level
    backend: str = "auto"  # auto | gloo | nccl
    port: int = 0  # rendezvous port on 127.0.0.1 (0: a free one)
    timeout: float = 60.0  # seconds a collective may wait for the other workers before the job fails
    seed: int = 0  # seeds the batch order and the mlp's initial weights

    def __post_init__(self) -> None:
        check(self.dtype in DTYPES, f"unknown --dtype {self.dtype!r}: use float32 or float64")
        check(self.backend in distributed.BACKENDS,
              f"unknown --backend {self.backend!r}: use one of {', '.join(distributed.BACKENDS)}")
        check(1 <= self.batch_size <= MAX_BATCH, f"--batch-size must be between 1 and {MAX_BATCH:,} (the bundled "
                                                 f"training images), got {self.batch_size}; try --batch-size 100")
        check(self.workers >= 1, f"--workers must be at least 1, got {self.workers}; try --workers 2")
        check(self.workers <= self.batch_size,
              f"--workers {self.workers} is more than the {self.batch_size} samples of the global batch: a worker "
              f"would have nothing to do; use fewer --workers or a larger --batch-size")
        check(self.micro_batches >= 1, f"--micro-batches must be at least 1, got {self.micro_batches}; try 4")
        check(self.micro_batches <= self.batch_size,
              f"--micro-batches {self.micro_batches} is more than the {self.batch_size} samples of the batch; "
              f"use at most --micro-batches {self.batch_size}")
        check(self.uneven or self.batch_size % self.micro_batches == 0,
              f"--micro-batches {self.micro_batches} does not divide --batch-size {self.batch_size}; use a divisor "
              f"(e.g. {_divisor_near(self.batch_size, self.micro_batches)}) or add --uneven")
        check(not self.uneven or self.micro_batches >= 2, "--uneven needs --micro-batches 2 or more")
        smallest = self.batch_size // self.workers
        check(self.micro_batches <= smallest,
              f"--micro-batches {self.micro_batches} is more than the {smallest} samples of the smallest worker's "
              f"shard (--batch-size {self.batch_size} over {self.workers} workers); use fewer micro-batches")
        check(1 <= self.steps <= MAX_STEPS, f"--steps must be between 1 and {MAX_STEPS:,}, got {self.steps}; "
                                            f"try --steps 30")
        check_positive("--lr", self.lr, "0.1")
        check_positive("--clip-norm", self.clip_norm, "0.1")
        check(isinstance(self.timeout, int | float) and 1 <= self.timeout <= 86400,
              f"--timeout must be between 1 and 86400 seconds, got {self.timeout!r}; try --timeout 60")


def _divisor_near(n: int, k: int) -> int:
    """The divisor of N nearest to K (the smaller on a tie); divisors come in pairs d, n/d with d ≤ √n."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return min({*small, *(n // d for d in small)}, key=lambda d: (abs(d - k), d))


def check_launch(config: Config, device: str) -> None:
    """What can be checked before anything runs: the port, the backend against the GPUs, torchrun's variables."""
    launched = distributed.torchrun_rank()
    if launched is None:
        distributed.check_port(config.port)
    if config.backend == "nccl":
        device_type = "cuda" if device in ("auto", "cuda") else device
        distributed.choose_backend("nccl", device_type, 1 if launched else config.workers)


# ---------------------------------------------------------------------------------------------------------------
# Splitting a batch, and accumulating over the parts (one process).
# ---------------------------------------------------------------------------------------------------------------

def micro_batch_sizes(batch: int, parts: int, uneven: bool) -> list[int]:
    """Equal parts; or, uneven, each part the largest power of two that leaves at least one sample for each part
    still to come, the last part the rest: 100 in 3 → 64, 32, 4."""
    if not uneven:
        return [batch // parts] * parts
    sizes, left = [], batch
    for k in range(parts - 1):
        room = left - (parts - 1 - k)  # keep one sample for every later part
        sizes.append(1 << (room.bit_length() - 1))
        left -= sizes[-1]
    return [*sizes, left]


def shard_sizes(batch: int, workers: int) -> list[int]:
    """The global batch over the workers as evenly as it goes: 100 over 3 → 34, 33, 33."""
    return [batch // workers + (1 if r < batch % workers else 0) for r in range(workers)]


def summed_cross_entropy(z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Σ_i ℓ_i: the per-sample losses added, not averaged (the caller divides by the global count)."""
    return -(y * torch.log_softmax(z, dim=1)).sum()


def accumulate(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, sizes: list[int], how: str) -> None:
    """K backward() calls, one per micro-batch: .grad adds them up. HOW says what each micro-batch's loss is."""
    model.zero_grad()
    batch, parts = len(x), len(sizes)
    for xk, yk in zip(x.split(sizes), y.split(sizes), strict=True):
        if how == "mean/K":
            loss = cross_entropy(model(xk), yk) / parts  # loss_k / K: the usual recipe
        elif how == "mean":
            loss = cross_entropy(model(xk), yk)  # the /K forgotten
        else:  # "sum/B"
            loss = summed_cross_entropy(model(xk), yk) / batch  # Σ_i ℓ_i / B: right for any sizes
        loss.backward()  # .grad += ∂loss/∂θ


def full_batch_grads(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> list[torch.Tensor]:
    return list(torch.autograd.grad(cross_entropy(model(x), y), list(model.parameters())))


def relative(a: list[torch.Tensor] | torch.Tensor, b: list[torch.Tensor] | torch.Tensor) -> float:
    """max |a − b| / max |b|: how far A is from B, relative to B's largest number."""
    a = torch.cat([t.reshape(-1) for t in a]) if isinstance(a, list | tuple) else a
    b = torch.cat([t.reshape(-1) for t in b]) if isinstance(b, list | tuple) else b
    return float((a.double() - b.double()).abs().max() / b.double().abs().max().clamp_min(1e-300))


class ReluSigns:
    """Which inputs of each ReLU of MODEL were > 0, for every sample of every forward pass since the last take().

    Two computations of the same samples that agree on these signs differ by rounding only. Where a ReLU input sits
    within rounding of 0, a forward pass on 12 samples and one on 100 (different matrix kernels, different last
    bits) can disagree on its sign: a unit is on in one and off in the other, and the gradients then differ by far
    more than rounding. The equality claims leave such steps out and count them."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.layers = [m for m in model.modules() if isinstance(m, torch.nn.ReLU)]
        self.calls: list[torch.Tensor] = []
        for m in self.layers:
            m.register_forward_hook(lambda module, inputs, output: self.calls.append(output > 0))

    def take(self) -> list[torch.Tensor]:
        """Per ReLU layer, the signs of all rows since the last take(), in the order the rows went through."""
        calls, self.calls, n = self.calls, [], len(self.layers)
        return [torch.cat(calls[i::n]) for i in range(n)]


def same_signs(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.equal(u, v) for u, v in zip(a, b, strict=True))


def flat(model: torch.nn.Module) -> torch.Tensor:
    return torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()


def new_model(config: Config, device: torch.device) -> torch.nn.Module:
    """gradlab clip's mlp (784→256→256→10), the same initial weights for every run and every worker."""
    return make_model("mlp", config.seed, device).to(DTYPES[config.dtype])


class Batches:
    """The STEPS global batches every run trains on, in the seeded order of gradlab mnist and clip (another pass
    starts when the data runs out). Kept as the images plus a (steps, B) index, gathered a batch at a time, so a
    long run costs 8 bytes per sample and step, not 3 KB."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, index: torch.Tensor) -> None:
        self.x, self.y, self.index = x, y, index

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x.index_select(0, self.index[step]), self.y.index_select(0, self.index[step])

    def __iter__(self):
        return (self[s] for s in range(len(self)))

    def to(self, device: torch.device) -> Batches:
        return Batches(self.x.to(device), self.y.to(device), self.index.to(device))


def global_batches(config: Config, data, device: torch.device) -> Batches:
    n = len(data.y_train)
    check(config.batch_size <= n, f"--batch-size {config.batch_size} is larger than the {n:,} training images of "
                                  f"{data.name}; use a smaller --batch-size")
    x = data.x_train.to(device, DTYPES[config.dtype])
    y = torch.nn.functional.one_hot(data.y_train, 10).to(device, DTYPES[config.dtype])
    per_pass = n // config.batch_size
    orders = batch_orders(n, math.ceil(config.steps / per_pass), True, config.seed)
    index = torch.cat([o[:per_pass * config.batch_size].view(per_pass, config.batch_size) for o in orders])
    return Batches(x, y, index[:config.steps].to(device))


def accumulation(config: Config, batches: Batches, device, check: Callable[[], None] = lambda: None) -> dict:
    """One process: the full-batch run (the reference for everything), the accumulated runs, and at every step of
    the reference the gradients of the other recipes at the same weights."""
    sizes = micro_batch_sizes(config.batch_size, config.micro_batches, config.uneven)
    K = len(sizes)
    ref = new_model(config, device)
    runs = {how: new_model(config, device) for how in ("mean/K", "sum/B")}
    opts = {how: torch.optim.SGD(m.parameters(), lr=config.lr) for how, m in [("full", ref), *runs.items()]}
    out = {"sizes": sizes, "loss": {"full": [], "mean/K": [], "sum/B": []}, "forgot_k": [], "mean_k": [],
           "sum_b": [], "norm_ratio": {"mean": [], "mean/K": [], "sum/B": []}, "flipped": []}
    signs = ReluSigns(ref)
    start = time.perf_counter()
    for x, y in batches:
        loss = cross_entropy(ref(x), y)  # the reference: one backward over the whole batch
        g = torch.autograd.grad(loss, list(ref.parameters()))
        g_norm = global_norm(g)
        whole = signs.take()
        flipped = False
        for how in ("mean", "mean/K", "sum/B"):  # the recipes' gradients at the reference's weights
            accumulate(ref, x, y, sizes, how)
            flipped |= not same_signs(signs.take(), whole)  # a ReLU flipped between the two: not rounding
            got = [p.grad.clone() for p in ref.parameters()]
            out["norm_ratio"][how].append(float(global_norm(got) / g_norm))
            if how == "mean":
                out["forgot_k"].append(relative(got, [K * t for t in g]))  # against K·g
            else:
                out["mean_k" if how == "mean/K" else "sum_b"].append(relative(got, g))
        out["flipped"].append(flipped)
        for p, gp in zip(ref.parameters(), g, strict=True):  # the reference steps with its own gradient
            p.grad = gp
        opts["full"].step()
        out["loss"]["full"].append(float(loss.detach()))
        for how, model in runs.items():  # the accumulated runs, each on its own weights
            accumulate(model, x, y, sizes, how)
            with torch.no_grad():
                out["loss"][how].append(float(cross_entropy(model(x), y)))
            opts[how].step()
        check()  # stops here when the workers' job has failed
    out["wall_s"] = time.perf_counter() - start
    out["final"] = {"full": flat(ref), **{how: flat(m) for how, m in runs.items()}}
    out["weights_vs_full"] = {how: relative(out["final"][how], out["final"]["full"]) for how in runs}
    return out


def single_process_seconds(config: Config, batches: Batches, device, check: Callable[[], None]) -> float:
    """How long one process takes for the whole run, one backward over the whole batch per step (for the speed
    table)."""
    model = new_model(config, device)
    opt = torch.optim.SGD(model.parameters(), lr=config.lr)
    start = time.perf_counter()
    for x, y in batches:
        opt.zero_grad()
        cross_entropy(model(x), y).backward()
        opt.step()
        check()
    return time.perf_counter() - start


# ---------------------------------------------------------------------------------------------------------------
# Data parallel: what each worker (rank) runs. The process group exists already (gradlab.distributed).
# ---------------------------------------------------------------------------------------------------------------

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
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

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


def rank_work(rank: int, world: int, device: torch.device, config: Config, batches: Batches,
              report: Callable = lambda *a: None) -> dict:
    """Everything one worker measures. Runs on every rank of the job, in step (collectives wait for all)."""
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
        if not any_rank(not same_signs(signs.take(), whole), device):
            break
    out["one_batch_step"] = s + 1
    naive = [t / world for t in all_reduce_sum(shard_mean)]  # all_reduce(SUM, ḡ_r) / W
    weighted = all_reduce_sum([t * (n / B) for t in shard_mean])  # all_reduce(SUM, (n_r/B)·ḡ_r)
    out["naive_vs_full"], out["weighted_vs_full"] = relative(naive, full), relative(weighted, full)
    out["norm"], out["norm_twice"] = norm_reduced_twice(weighted)
    clip_then_reduce = all_reduce_sum([t * (n / B) for t in torch_clip(shard_mean, config.clip_norm)[1]])
    reduce_then_clip = torch_clip(weighted, config.clip_norm)[1]
    out["shard_norm"] = float(global_norm(shard_mean))
    out["clip_order"] = relative(clip_then_reduce, reduce_then_clip)
    out["reduce_then_clip_vs_single"] = relative(reduce_then_clip, torch_clip(full, config.clip_norm)[1])

    # 2. Training, in lockstep with one process on the whole batch: at every step each run starts from the
    # reference's weights, computes its gradient its own way (all-reduce included), and is compared with the
    # reference's; then the reference steps. (Left to run freely, float32 runs drift apart: see the docstring.)
    K = config.micro_batches
    runs = {"manual": lambda m, x, y, comm: manual_step(m, x, y, B, None, comm),
            "manual+clip": lambda m, x, y, comm: manual_step(m, x, y, B, config.clip_norm, comm),
            "ddp": lambda m, x, y, comm: ddp_step(m, x, y, B, world, 1, False),
            "ddp sync every micro-batch": lambda m, x, y, comm: ddp_step(m, x, y, B, world, K, False),
            "ddp no_sync": lambda m, x, y, comm: ddp_step(m, x, y, B, world, K, True)}
    out["runs"] = {}
    for i, (name, step) in enumerate(runs.items()):
        out["runs"][name] = lockstep(config, batches, mine, device, world, step, ddp=name.startswith("ddp"),
                                     clip_norm=config.clip_norm if name == "manual+clip" else None,
                                     report=lambda s, name=name, i=i: report(
                                         f"workers: {RUN_LABELS[name].replace('K ', f'{K} ')} step {s}/{config.steps}",
                                         i * config.steps + s, len(runs) * config.steps))
    return out


def any_rank(flag: bool, device: torch.device) -> bool:
    """True on every worker when FLAG is true on any of them (all_reduce with MAX)."""
    t = torch.tensor([float(flag)], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())


def lockstep(config: Config, batches: Batches, mine: slice, device, world: int, step: Callable, ddp: bool,
             clip_norm: float | None, report: Callable) -> dict:
    """STEP's gradients against one process's on the whole batch, from the same weights at every step; also how
    long STEP took, how long it spent communicating, and (DDP) what its comm hook counted."""
    from torch.nn.parallel import DistributedDataParallel

    ref = new_model(config, device)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=config.lr)
    model = new_model(config, device)
    stats = CommStats()
    if ddp:
        model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
        model.register_comm_hook(stats, counting_hook)
    target = model.module if ddp else model
    run_signs, ref_signs = ReluSigns(target), ReluSigns(ref)
    worst, worst_rank0, flips = math.nan, 0.0, 0
    comm, losses, wall = [], [], 0.0
    for s in range(config.steps):
        x, y = batches[s]
        with torch.no_grad():  # this run starts the step from the reference's weights
            for p, q in zip(target.parameters(), ref.parameters(), strict=True):
                p.copy_(q)
        start = time.perf_counter()
        losses.append(step(model, x[mine], y[mine], comm))
        wall += time.perf_counter() - start
        got = torch.cat([p.grad.reshape(-1) for p in target.parameters()])
        ref_opt.zero_grad()
        cross_entropy(ref(x), y).backward()  # the reference: one process, the whole batch
        if clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(ref.parameters(), clip_norm)
        if any_rank(not same_signs(run_signs.take(), [t[mine] for t in ref_signs.take()]), device):
            flips += 1  # a ReLU flipped on some worker: the difference is not rounding; counted, left out
        else:
            diff = relative(got, [p.grad for p in ref.parameters()])
            worst = diff if math.isnan(worst) else max(worst, diff)
        rank0 = got.clone()
        dist.broadcast(rank0, src=0)  # every worker's gradient against rank 0's
        worst_rank0 = max(worst_rank0, relative(got, rank0))
        ref_opt.step()
        report(s + 1)
    loss = torch.stack(losses)
    dist.all_reduce(loss)  # Σ over workers of their shares = each step's full-batch mean loss
    if not ddp:  # the hand-written step all-reduces the whole gradient in one call
        stats.calls, stats.seconds = len(comm), sum(comm)
        stats.bytes = len(comm) * got.numel() * got.element_size()
    return {"vs_single": worst, "flips": flips, "vs_rank0": worst_rank0, "wall_s": wall, "comm_s": stats.seconds,
            "calls": stats.calls, "bytes": stats.bytes, "loss": loss.tolist()}


# ---------------------------------------------------------------------------------------------------------------
# The lesson: accumulation here, data parallel on the workers, then the claims.
# ---------------------------------------------------------------------------------------------------------------

def run(config: Config, data, device: torch.device | None = None,
        progress: Callable[[str, int, int], None] = lambda *a: None) -> Result:
    """Accumulate in this process, then run the workers (spawned, or this rank of a torchrun job), check the claims.
    Pure: no printing (the workers never print either)."""
    device = device or torch.device("cpu")
    launched = distributed.torchrun_rank()
    world = launched[1] if launched else config.workers
    check(world <= config.batch_size, f"the torchrun job has {world} workers, more than the {config.batch_size} "
                                      f"samples of the global batch; use a larger --batch-size")
    check(config.micro_batches <= config.batch_size // world,
          f"--micro-batches {config.micro_batches} is more than the {config.batch_size // world} samples of the "
          f"smallest of {world} shards; use fewer micro-batches")
    batches = global_batches(config, data, device)

    def here(check) -> dict:  # this process's share, while the workers run: accumulation, the one-process speed
        acc = accumulation(config, batches, device, check)
        acc["single_s"] = single_process_seconds(config, batches, device, check)
        return acc

    try:
        ranks, how, acc = distributed.run(
            rank_work, (config, batches.to(torch.device("cpu"))), workers=config.workers, backend=config.backend,
            port=config.port, timeout_s=config.timeout, device_type=device.type, threads=torch.get_num_threads(),
            progress=progress,
            meanwhile=here)
    except RuntimeError as e:  # a rendezvous that cannot start: the port was taken meanwhile, say
        text = " ".join(str(e).split())[:200]
        raise GradlabError(f"could not start the workers: {text}; try another --port") from None
    notes = []
    if launched is None and config.workers > (os.cpu_count() or 1):
        notes.append(f"{config.workers} workers on {os.cpu_count()} CPU cores: oversubscribed, so the speed table "
                     f"measures waiting more than computing")
    if launched and config.workers != world and config.workers != Config.workers:
        notes.append(f"--workers {config.workers} ignored: torchrun started {world} workers")
    return Result(
        lesson="ddp",
        title="one big batch's gradient, split: gradient accumulation and data-parallel all-reduce",
        config={}, seed=config.seed, data=data.info(min(config.steps * config.batch_size, len(data.y_train)), 0),
        metrics=metrics(config, acc, ranks, how),
        claims=claims(config, acc, ranks),
        tables=tables(config, acc, ranks, how),
        curves=curves(config, acc, ranks),
        notes=notes,
    )


def kept(values: list[float], flipped: list[bool]) -> float:
    """The largest of VALUES over the steps where no ReLU flipped (NaN, a failed claim, if there is none)."""
    rest = [v for v, f in zip(values, flipped, strict=True) if not f]
    return max(rest) if rest else math.nan


def worst(values) -> float:
    """The largest value, or NaN (a failed claim) when any is NaN."""
    values = list(values)
    return math.nan if any(math.isnan(v) for v in values) else max(values)


def left_out(flips: int) -> str:
    return f"; {flips} step{'s' * (flips > 1)} where a ReLU flipped left out" if flips else ""


def claims(config: Config, acc: dict, ranks: list[dict]) -> list[Claim]:
    tol, K, W = TOLERANCE[config.dtype], len(acc["sizes"]), len(ranks)
    sizes = "/".join(map(str, acc["sizes"]))
    flipped, N = acc["flipped"], config.steps
    out = []
    if not config.uneven:
        out.append(Claim("accumulate-mean-over-k", f"{K} micro-batches, loss_k/K accumulated ≡ one backward over the "
                                                   f"whole batch, at each of {N} steps from the same weights (max "
                                                   f"relative{left_out(sum(flipped))})",
                         kept(acc["mean_k"], flipped), tol))
        ratio = acc["norm_ratio"]["mean"][0]
        out.append(Claim("accumulate-without-k", f"without /K the accumulated gradient is K × the full one "
                                                 f"(‖Σ‖/‖g‖ = {ratio:.6g}, K = {K}): max relative |Σ − K·g| over "
                                                 f"the steps{left_out(sum(flipped))}", kept(acc["forgot_k"], flipped),
                         tol))
    else:
        out.append(Claim("mean-of-means-differs", f"micro-batches {sizes}: the mean of per-micro-batch means ≠ the "
                                                  f"full-batch gradient (smallest relative difference over the "
                                                  f"steps)", min(acc["mean_k"]), DIFFERS, ">="))
    out.append(Claim("sum-over-global-count", f"micro-batches {sizes}: Σ ℓ_i / B accumulated ≡ one backward over the "
                                              f"whole batch, at each of {N} steps (max relative"
                                              f"{left_out(sum(flipped))})", kept(acc["sum_b"], flipped), tol))
    shards = shard_sizes(config.batch_size, W)
    if len(set(shards)) == 1:
        out.append(Claim("allreduce-mean-equals-full", f"{W} worker{'s' * (W > 1)}: all_reduce(SUM)/W of the shard "
                                                       f"gradients ≡ the full-batch gradient (max relative, any rank)",
                         max(r["naive_vs_full"] for r in ranks), tol))
    else:
        split = "/".join(map(str, shards))
        out.append(Claim("allreduce-mean-differs", f"unequal shards {split}: all_reduce(SUM)/W of the shard means ≠ "
                                                   f"the full-batch gradient (relative)",
                         min(r["naive_vs_full"] for r in ranks), DIFFERS, ">="))
        out.append(Claim("allreduce-weighted-equals-full", f"shards {split}: all_reduce(SUM) of (n_r/B)·shard "
                                                           f"gradient ≡ the full-batch gradient (max relative)",
                         max(r["weighted_vs_full"] for r in ranks), tol))
    run = lambda name, key="vs_single": worst(r["runs"][name][key] for r in ranks)  # noqa: E731 — worst rank
    flips = lambda *names: left_out(max(ranks[0]["runs"][n]["flips"] for n in names))  # noqa: E731
    out.append(Claim("manual-allreduce-equals-single", f"a hand-written all_reduce's gradient ≡ one process's on the "
                                                       f"whole batch, at each of {N} steps from the same weights (max "
                                                       f"relative{flips('manual')})", run("manual"), tol))
    out.append(Claim("ddp-equals-single", f"DistributedDataParallel's gradient ≡ one process's on the whole batch, at "
                                          f"each of {N} steps (max relative{flips('ddp')})", run("ddp"), tol))
    out.append(Claim("replicas-identical", "DDP leaves the same gradient on every worker as on rank 0, so the "
                                           "replicas stay identical (max relative)", run("ddp", "vs_rank0"), tol))
    if W > 1:
        out.append(Claim("clip-then-reduce-differs", f"clip each worker's gradient, then all-reduce ≠ all-reduce, "
                                                     f"then clip (relative; --clip-norm {config.clip_norm:g})",
                         min(r["clip_order"] for r in ranks), DIFFERS, ">="))
    else:
        out.append(Claim("clip-order-one-worker", "one worker: nothing to reduce, so clip-then-reduce ≡ "
                                                  "reduce-then-clip (run --workers 2 to see them differ)",
                         max(r["clip_order"] for r in ranks), tol))
    out.append(Claim("reduce-then-clip-equals-single", f"all-reduce, then clip_grad_norm_ ≡ one process's "
                                                       f"clip_grad_norm_, at each of {N} steps (max relative"
                                                       f"{flips('manual+clip')})",
                     worst([*(r["reduce_then_clip_vs_single"] for r in ranks), run("manual+clip")]), tol))
    norms = [r["norm"] for r in ranks]
    out.append(Claim("norm-same-on-every-rank", f"after the all-reduce the global norm ‖g‖ = {norms[0]:.6g} on every "
                                                f"rank (max − min, relative)", (max(norms) - min(norms)) / norms[0],
                     tol))
    twice = ranks[0]["norm_twice"] / ranks[0]["norm"]
    out.append(Claim("norm-reduced-twice", f"reducing that norm again gives √W times it: {twice:.6g} × ‖g‖, √{W} = "
                                           f"{math.sqrt(W):.6g} (relative difference)",
                     abs(twice - math.sqrt(W)) / math.sqrt(W), tol))
    out.append(Claim("no-sync-equals-sync", f"DDP accumulating {K} micro-batches: no_sync() ≡ syncing every "
                                            f"micro-batch ≡ one process, at each of {N} steps (max relative"
                                            f"{flips('ddp no_sync', 'ddp sync every micro-batch')})",
                     worst([run("ddp no_sync"), run("ddp sync every micro-batch")]), tol))
    every, quiet = ranks[0]["runs"]["ddp sync every micro-batch"], ranks[0]["runs"]["ddp no_sync"]
    out.append(Claim("no-sync-sends-k-times-less", f"bytes all-reduced, syncing every micro-batch ÷ with no_sync() "
                                                   f"({every['calls']} vs {quiet['calls']} all-reduce calls) = K",
                     every["bytes"] / max(quiet["bytes"], 1), K, "=="))
    return out


def metrics(config: Config, acc: dict, ranks: list[dict], how: dict) -> dict:
    return {"job": how, "micro_batch_sizes": acc["sizes"], "shard_sizes": [r["shard"] for r in ranks],
            "accumulation": {"weights_vs_full": acc["weights_vs_full"],
                             "norm_ratio": acc["norm_ratio"], "forgot_k_vs_k_g": acc["forgot_k"],
                             "mean_of_means_vs_full": acc["mean_k"], "wall_s": acc["wall_s"]},
            "single_process_s": acc["single_s"], "ranks": ranks}


RUN_LABELS = {"manual": "manual all_reduce", "manual+clip": "manual, then clip", "ddp": "DDP",
              "ddp sync every micro-batch": "DDP K parts, sync each", "ddp no_sync": "DDP K parts, no_sync"}


def tables(config: Config, acc: dict, ranks: list[dict], how: dict) -> list[Table]:
    K, B, N, W = len(acc["sizes"]), config.batch_size, config.steps, len(ranks)
    sizes = "/".join(map(str, acc["sizes"]))
    ratio = {how: f"{min(r):.6g} … {max(r):.6g}" if f"{min(r):.6g}" != f"{max(r):.6g}" else f"{r[0]:.6g}"
             for how, r in acc["norm_ratio"].items()}
    rows = [["one backward over the whole batch", "g (the reference)", "1", 0.0, 0.0],
            ["loss_k / K", "Σ ḡ_k / K", ratio["mean/K"], max(acc["mean_k"]), acc["weights_vs_full"]["mean/K"]],
            ["loss_k (the /K forgotten)", "Σ ḡ_k", ratio["mean"], None, None],
            ["Σ ℓ_i / B", "Σ_k Σ_i ∇ℓ_i / B", ratio["sum/B"], max(acc["sum_b"]), acc["weights_vs_full"]["sum/B"]]]
    accumulation_table = Table(f"accumulation, one process: batch {B} in {K} micro-batches ({sizes})",
                               ["each micro-batch's loss", "accumulated gradient", "‖accumulated‖ / ‖g‖",
                                "vs g (max rel)", f"free-running: weights after {N} steps vs full"], rows,
                               [None, None, None, ".3g", ".3g"],
                               note="relative: max |a − b| / max |b|. Every recipe's gradient is computed at the "
                                    "full-batch run's weights at every step (‖·‖ ratio: range over the steps). "
                                    "Free-running: each recipe trained on its own weights; in float32 a different "
                                    "summation order changes the last bits, and a ReLU input sitting at 0 can flip, "
                                    "so runs may drift apart far beyond rounding (not a claim)")
    per_rank = Table(f"data parallel: {W} worker{'s' * (W > 1)} ({how['mode']}, {how['backend']}, rendezvous "
                     f"{how['rendezvous']})",
                     ["rank", "shard", "‖ḡ_r‖ (local)", "‖g‖ after all-reduce", "all_reduce/W vs g",
                      "DDP gradient vs rank 0"],
                     [[r["rank"], r["shard"], r["shard_norm"], r["norm"], r["naive_vs_full"],
                       r["runs"]["ddp"]["vs_rank0"]] for r in ranks], [None, None, ".6g", ".9g", ".3g", ".3g"],
                     note=f"--clip-norm {config.clip_norm:g}: below the local norms, so clipping acts before and "
                          f"after the reduction" if min(r["shard_norm"] for r in ranks) > config.clip_norm else "")
    speed_rows = [["1 process", 1, N * B / acc["single_s"], None, None, None, None]]
    for name, label in RUN_LABELS.items():
        rs = [r["runs"][name] for r in ranks]
        wall = max(r["wall_s"] for r in rs)
        comm = sum(r["comm_s"] for r in rs) / W
        speed_rows.append([label.replace("K", str(K)), W, N * B / wall, 1000 * comm / N, comm / wall,
                           rs[0]["calls"], rs[0]["bytes"] / 1e6, rs[0]["flips"]])
    speed_rows[0].append(sum(acc["flipped"]))
    speed = Table("speed: samples/s and time in communication (measured, not claimed)",
                  ["run", "W", "samples/s", "comm ms/step", "comm %", "all-reduces", "MB", "ReLU flips"],
                  speed_rows, [None, None, ",.0f", ".2f", ".0%", None, ".2f", None],
                  note=f"samples/s: global-batch samples per second of each run's training steps ({N} steps of {B} "
                       f"samples). {os.cpu_count()} CPU cores here, shared by {W} worker{'s' * (W > 1)} and this "
                       f"process (which runs the one-process reference beside them): on a model this small the work "
                       f"per step is tiny, so W processes on the same cores mostly add waiting (for a core, and for "
                       f"every all-reduce through the loopback sockets) and come out slower than one process. Data "
                       f"parallelism pays when each worker has a GPU or machine of its own and computing a step "
                       f"costs far more than sending its gradient. comm: time inside all_reduce "
                       f"(manual) or from a bucket's all-reduce call to its completion (DDP, overlapping backward), "
                       f"mean over workers; all-reduces and MB sent: per worker (DDP: counted by a comm hook). "
                       f"The runs copy the reference's weights before each step: that copy is not timed. ReLU "
                       f"flips: steps on which a ReLU input's sign differed from the whole batch's forward pass "
                       f"(1 process: any accumulation recipe)")
    return [accumulation_table, per_rank, speed]


def curves(config: Config, acc: dict, ranks: list[dict]) -> dict[str, Curve]:
    """The loss of the runs that agree (on top of each other, by design), and the splits that do not: the gradient
    each accumulation recipe gives, measured against the whole batch's at every step."""
    x = list(range(1, config.steps + 1))
    W, K = len(ranks), len(acc["sizes"])
    series = {"1 process, whole batch": acc["loss"]["full"],
              f"accumulated, {'Σ ℓ / B' if config.uneven else 'loss_k / K'}":
                  acc["loss"]["sum/B" if config.uneven else "mean/K"],
              f"{W} worker{'s' * (W > 1)}, manual all_reduce": ranks[0]["runs"]["manual"]["loss"],
              f"{W} worker{'s' * (W > 1)}, DDP": ranks[0]["runs"]["ddp"]["loss"]}
    if config.uneven:
        series["accumulated, mean of means (wrong)"] = acc["loss"]["mean/K"]
    mean_k = "loss_k / K, unequal parts: the mean of means (wrong)" if config.uneven else "loss_k / K"
    ratios = {f"loss_k, the /K forgotten (K = {K})": acc["norm_ratio"]["mean"], mean_k: acc["norm_ratio"]["mean/K"],
              "Σ ℓ_i / B": acc["norm_ratio"]["sum/B"]}
    return {"training loss per step": Curve("step", "loss on the global batch", x, series),
            "accumulated gradient vs the whole batch's": Curve(
                "step", "‖accumulated gradient‖ / ‖g‖", x, ratios,
                refs={"= ‖g‖ (right)": 1.0, f"= K·‖g‖ (the /K forgotten), K = {K}": float(K)})}
