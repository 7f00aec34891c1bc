"""One big batch's gradient, split: gradient accumulation and data-parallel all-reduce on torch.distributed.

The gradient of the mean loss over a global batch of B samples is g = (1/B) · Σ_i ∇ℓ_i. Split the batch into parts
of n_1 … n_K samples (micro-batches one after another, or shards on W workers at once), with
ḡ_k = (1/n_k) · Σ_{i in part k} ∇ℓ_i a part's mean gradient. Then, for any sizes,

    g = Σ_k (n_k / B) · ḡ_k

Accumulation, one process: `.backward()` adds into `.grad`, so K backward calls add K gradients.

    loss_k / K, equal parts     Σ_k ḡ_k / K = g              (n_k / B = 1/K)
    loss_k, the /K forgotten    Σ_k ḡ_k = K · g              (K× the gradient)
    loss_k / K, unequal parts   Σ_k ḡ_k / K ≠ g              (4 samples weigh as much as 64)
    Σ_i ℓ_i / B, any parts      Σ_k Σ_{i in k} ∇ℓ_i / B = g  (sum, then divide by the global count)

Data parallel, W workers, shard r holding n_r samples. `all_reduce(t, SUM)` adds t over the workers and leaves
the sum on every one of them:

    all_reduce(SUM, ḡ_r) / W         = g   when the shards are equal
    all_reduce(SUM, (n_r / B) · ḡ_r) = g   for any shards

`DistributedDataParallel` does the first inside `backward()`: it divides each gradient by W, then all-reduces it
with SUM, bucket by bucket while backward still runs (torch's default_hooks.py, allreduce_hook). Clipping must
see the global gradient: clip(all-reduced g) = clip(g), but the all-reduce of clipped ḡ_r is not.

---

In the code: manual_step is data parallelism by hand (each worker's loss Σ_{i in its shard} ℓ_i / B, all-reduced
with all_reduce_sum, written into .grad); ddp_step is the same with DDP, whose /W it undoes by making each
worker's loss Σ_{i in r} ℓ_i · W / B, so that DDP leaves Σ_r Σ_i ∇ℓ_i / B = g for any shards. Accumulation, one
backward per micro-batch of micro_batch_sizes, is the exercise ddp.accumulated_grad (and the all-reduce
ddp.average_gradients and ddp.sync_gradients), so its code is not shown here.

How DDP reduces: with no hook registered its C++ reducer divides by W and all-reduces with SUM;
torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py's allreduce_hook, which counting_hook wraps to count
the bytes, does the same (`tensor.div_(group_to_use.size())`, then `dist.all_reduce`), and its docstring says DDP's
results with it are the same as with no hook. PyTorch's DDP documentation makes the point about a summed loss:
"the gradient will be M times smaller when compared to the same model trained on a single node with batch=M*N if
the loss is summed (NOT averaged as usual) across instances in a batch (because the gradients between different
nodes are averaged)" (torch/nn/parallel/distributed.py). So DDP computes the whole batch's gradient g only:
  * with equal shards, when each worker's loss is the mean over its shard: 100 samples over 3 workers are
    34/33/33, and the mean of the shard means weighs a sample of a 33-sample shard more than one of the 34;
  * with no coupling across samples: each sample's loss a function of that sample alone. A BatchNorm model's loss
    is still a mean of per-sample losses, but BatchNorm normalises each shard by the shard's own mean and
    variance, so a worker's forward pass is not its part of the whole batch's (torch.nn.SyncBatchNorm computes
    them "over all mini-batches of the same process groups"; tests/test_ddp_lesson.py measures the difference);
  * to rounding, not bit for bit: the sums run in another order (the claims bound the difference by 1e-6 relative
    in float32, 1e-12 in float64).

What K× the gradient does to a step depends on the optimizer (forgotten_k_by_optimizer trains each twice, with
and without the /K, and a table shows them):

    SGD       Δθ = −lr·g                                    a K× longer step
    Adam      Δθ = −lr·m̂/(√v̂ + ε)                          m̂ and √v̂ both grow K×: the same step, but for ε
    RMSprop   Δθ = −lr·g/(√v + ε), v ← αv + (1 − α)g²      (torch's, v from 0) the same, but for ε

so with Adam or RMSprop the bug barely shows, which is why it hides.

Clipping: after the all-reduce every worker holds the same g, hence the same ‖g‖, and there is nothing left to
reduce; reducing the norm again adds W equal squares, sqrt(Σ_r ‖g‖²) = √W · ‖g‖ (norm_reduced_twice: arithmetic,
shown in the per-rank table, not a claim). The same reduction is right when each worker holds only a slice g_r of
the parameters, as FSDP shards them: sqrt(Σ_r ‖g_r‖²) = ‖g‖ (sharded_norm, a claim).

`no_sync()`: with DDP, accumulating K micro-batches all-reduces after each of them. Inside `with ddp.no_sync():`
backward only adds locally; the K-th backward all-reduces the sum: the same gradient, K times fewer bytes sent
(counting_hook counts them).

Every equality is checked where it lives: at each training step, from the same weights. Left to train on their own,
two float32 runs that add the same numbers in a different order drift apart (the accumulation table shows it; it
is not a claim); even one step can put a ReLU input within rounding of 0 on opposite sides in the two
computations. Such a step is detected (ReluSigns: the sign of every ReLU input of every sample, in both), left out
of the equality claims, and counted. With one worker, or one micro-batch, the claims that would compare a
computation with itself are left out, and a note says which.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable

import torch

from gradlab.errors import OptionError, check
from gradlab.kit import autograd_graph, distributed
from gradlab.kit.exercise import relative_to_largest
from gradlab.kit.result import Claim, Result
from gradlab.lessons.ddp.batches import (  # noqa: F401 — the names --explain shows and the tests use, in one place
    full_batch_grads,
    global_batches,
    micro_batch_sizes,
    new_model,
    shard_sizes,
    summed_cross_entropy,
)
from gradlab.lessons.ddp.ranks import (  # noqa: F401
    all_reduce_sum,
    counting_hook,
    ddp_step,
    manual_step,
    norm_reduced_twice,
    rank_work,
    sharded_norm,
)
from gradlab.lessons.ddp.report import curves, metrics, tables
from gradlab.lessons.ddp.settings import Config  # the settings, declared once (no torch: --help reads them)
from gradlab.lessons.ddp.single import (  # noqa: F401 (accumulate)
    Accumulated,
    accumulate,
    accumulation,
    forgotten_k_by_optimizer,
    single_process_seconds,
)

# The lesson's rooms, by where their code runs: ddp_config (the settings), ddp_batches (what every process shares),
# ddp_single (this process: accumulation and the one-process reference), ddp_ranks (every worker, in lockstep),
# ddp_report (tables and curves). This module runs them and states the claims.

# An equivalence holds to rounding: relative to the largest number compared. A "≠" claim needs a difference far
# above rounding in either dtype.
TOLERANCE = {"float32": 1e-6, "float64": 1e-12}
DIFFERS = 1e-4

# The code `--explain` shows beside the math, read from the lesson's files at run time.
EXPLAIN = ("manual_step", "all_reduce_sum", "ddp_step", "micro_batch_sizes", "forgotten_k_by_optimizer",
           "counting_hook", "norm_reduced_twice", "sharded_norm")
EXPLAIN_SHORT = ("manual_step",)  # what --explain prints in full; it names the others


def graphs(config: Config, images: int = 4) -> list[autograd_graph.Graph]:
    """Each rank's loss on its shard of a few seeded random images, as manual_step computes it (Σ_{i in my shard}
    ℓ_i / B), drawn in this process side by side, joined under their leaves by the all-reduce that adds the ranks'
    gradients after backward (all_reduce_sum: one flat buffer, outside autograd), with the sum's distance to the
    full batch's gradient."""
    model = new_model(config, torch.device("cpu"))
    g = torch.Generator().manual_seed(config.seed)
    x = torch.rand(images, 784, generator=g, dtype=next(model.parameters()).dtype)
    y = torch.nn.functional.one_hot(torch.randint(10, (images,), generator=g), 10).to(x.dtype)
    world = min(config.workers, images)
    ranks = []
    for xr, yr in zip(x.split(shard_sizes(images, world)), y.split(shard_sizes(images, world)), strict=True):
        with autograd_graph.record():
            loss = summed_cross_entropy(model(xr), yr) / images  # Σ_{i in my shard} ℓ_i / B: my share of the mean
        ranks.append(autograd_graph.trace(loss, title="", names={"model": model}))
    graph = autograd_graph.join(ranks, title=f"ddp: {world} ranks, each its share of the mean loss on {images} "
                                             f"images, joined by the all-reduce", parts=[f"rank {r}" for r in
                                                                                          range(world)])
    names = [name for name, _ in model.named_parameters()]
    leaves = [n for n in graph.nodes if n.leaf]
    per_rank = [[next(n for n in leaves if n.part == f"rank {r}" and n.label == name) for name in names]
                for r in range(world)]
    summed = [sum(graph.leaf_grads[rank[k].id] for rank in per_rank) for k in range(len(names))]
    full = full_batch_grads(model, x, y)
    flat = torch.cat([t.reshape(-1) for t in summed])
    facts = [f"rank {r} sends ‖∇‖ = "
             f"{autograd_graph.norm(torch.cat([graph.leaf_grads[n.id].reshape(-1) for n in rank])):.6g}"
             for r, rank in enumerate(per_rank)]
    autograd_graph.after_backward(
        graph, "all_reduce(SUM)", [n.id for rank in per_rank for n in rank], result=flat,
        facts=[f"one flat buffer of {flat.numel()} numbers (one DDP bucket)",
               *facts, f"every rank gets the sum: ‖Σ‖ = {autograd_graph.norm(flat):.6g}",
               f"the full batch's gradient differs by {relative_to_largest(summed, full):.2g} (max rel)"])
    graph.note = ("look at: all_reduce(SUM) under the leaves: each rank's gradient is a share; their sum is the full "
                  "batch's")
    return [graph]


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

    def in_this_process(stop_if_cancelled: Callable[[], None]) -> Accumulated:  # while the workers run
        acc = accumulation(config, batches, device, stop_if_cancelled)
        acc.optimizers = forgotten_k_by_optimizer(config, batches, device, stop_if_cancelled)
        acc.single_s = single_process_seconds(config, batches, device, stop_if_cancelled)
        return acc

    job = distributed.Job(fn=rank_work, args=(config, batches.to(torch.device("cpu"))), workers=config.workers,
                          backend=config.backend, port=config.port, timeout_s=config.timeout,
                          device_type=device.type, threads=torch.get_num_threads())
    try:
        ranks, launch, acc = distributed.run(job, progress=progress, meanwhile=in_this_process)
    except RuntimeError as e:  # a rendezvous that cannot start: the port was taken meanwhile, say
        text = " ".join(str(e).split())[:200]
        raise OptionError("port", lambda say: f"could not start the workers: {text}; try another {say('port')}") \
            from None
    notes = []
    if launched is None and config.workers > (os.cpu_count() or 1):
        notes.append(f"{config.workers} workers on {os.cpu_count()} CPU cores: oversubscribed, so the speed table "
                     f"measures waiting more than computing")
    if launched and config.workers != world and config.workers != Config.workers:
        notes.append(f"--workers {config.workers} ignored: torchrun started {world} workers")
    notes += not_claimed(world, config.micro_batches)
    return Result(
        lesson="ddp",
        title="one big batch's gradient, split: gradient accumulation and data-parallel all-reduce",
        seed=config.seed, data=data.info(min(config.steps * config.batch_size, len(data.y_train)), 0),
        metrics=metrics(config, acc, ranks, launch),
        claims=claims(config, acc, ranks),
        tables=tables(config, acc, ranks, launch),
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


def not_claimed(world: int, parts: int) -> list[str]:
    """The claims a run with one worker or one micro-batch leaves out: there they compare a computation with
    itself, so they could not fail, and a claim that cannot fail is no evidence."""
    notes = []
    if world == 1:
        notes.append("one worker: nothing is reduced, so the claims that compare workers (all_reduce/W ≡ g, the "
                     "clip order, the norm on every rank, the sharded norm, the replicas) would compare a "
                     "computation with itself and are not made; run --workers 2")
    if parts == 1:
        notes.append("one micro-batch: loss_k/K and the /K forgotten are the whole batch's loss, and no_sync() "
                     "never applies, so those claims are not made; run --micro-batches 2 or more")
    return notes


def claims(config: Config, acc: Accumulated, ranks: list[dict]) -> list[Claim]:
    """Every claim compares two different computations (or a computation with an independent one): where a run's
    settings make both sides the same computation (one worker, one micro-batch), the claim is left out and a note
    says so (not_claimed)."""
    return [*accumulation_claims(config, acc), *shard_claims(config, ranks), *worker_claims(config, acc, ranks)]


def accumulation_claims(config: Config, acc: Accumulated) -> list[Claim]:
    """Gradient accumulation in this process: the micro-batches' losses, scaled right, add up to the batch's."""
    tol, K = TOLERANCE[config.dtype], len(acc.sizes)
    sizes = "/".join(map(str, acc.sizes))
    flipped, N = acc.flipped, config.steps
    out = []
    if not config.uneven and K > 1:
        out.append(Claim("accumulate-mean-over-k", f"{K} micro-batches, loss_k/K accumulated ≡ one backward over the "
                                                   f"whole batch, at each of {N} steps from the same weights (max "
                                                   f"relative{left_out(sum(flipped))})",
                         kept(acc.mean_k, flipped), tol))
        ratio = acc.norm_ratio["mean"][0]
        out.append(Claim("accumulate-without-k", f"without /K the accumulated gradient is K × the full one "
                                                 f"(‖Σ‖/‖g‖ = {ratio:.6g}, K = {K}): max relative |Σ − K·g| over "
                                                 f"the steps{left_out(sum(flipped))}", kept(acc.forgot_k, flipped),
                         tol))
    elif config.uneven:
        out.append(Claim("mean-of-means-differs", f"micro-batches {sizes}: the mean of per-micro-batch means ≠ the "
                                                  f"full-batch gradient (smallest relative difference over the "
                                                  f"steps)", min(acc.mean_k), DIFFERS, ">="))
    out.append(Claim("sum-over-global-count", f"micro-batches {sizes}: Σ ℓ_i / B accumulated ≡ one backward over the "
                                              f"whole batch, at each of {N} steps (max relative"
                                              f"{left_out(sum(flipped))})", kept(acc.sum_b, flipped), tol))
    return out


def shard_claims(config: Config, ranks: list[dict]) -> list[Claim]:
    """The shards' gradients all-reduced against the full batch's: divided by W (right for equal shards only), or
    each weighted by n_r/B."""
    tol, W = TOLERANCE[config.dtype], len(ranks)
    out = []
    shards = shard_sizes(config.batch_size, W)
    if W > 1 and len(set(shards)) == 1:
        out.append(Claim("allreduce-mean-equals-full", f"{W} workers: all_reduce(SUM)/W of the shard gradients ≡ the "
                                                       f"full-batch gradient (max relative, any rank)",
                         max(r["naive_vs_full"] for r in ranks), tol))
    elif W > 1:
        split = "/".join(map(str, shards))
        out.append(Claim("allreduce-mean-differs", f"unequal shards {split}: all_reduce(SUM)/W of the shard means ≠ "
                                                   f"the full-batch gradient (relative)",
                         min(r["naive_vs_full"] for r in ranks), DIFFERS, ">="))
        out.append(Claim("allreduce-weighted-equals-full", f"shards {split}: all_reduce(SUM) of (n_r/B)·shard "
                                                           f"gradient ≡ the full-batch gradient (max relative)",
                         max(r["weighted_vs_full"] for r in ranks), tol))
    return out


def worker_claims(config: Config, acc: Accumulated, ranks: list[dict]) -> list[Claim]:
    """The workers' steps against one process's: all-reduce by hand and DDP, the replicas, the clip order, the
    sharded norm, and no_sync()."""
    tol, K, W, N = TOLERANCE[config.dtype], len(acc.sizes), len(ranks), config.steps
    out = []

    def worst_rank(way: str, key: str = "vs_single") -> float:
        return worst(r["runs"][way][key] for r in ranks)

    def flips(*ways: str) -> str:
        return left_out(max(ranks[0]["runs"][w]["flips"] for w in ways))

    out.append(Claim("manual-allreduce-equals-single", f"a hand-written all_reduce's gradient ≡ one process's on the "
                                                       f"whole batch, at each of {N} steps from the same weights (max "
                                                       f"relative{flips('manual')})", worst_rank("manual"), tol))
    out.append(Claim("ddp-equals-single", f"DistributedDataParallel's gradient ≡ one process's on the whole batch, at "
                                          f"each of {N} steps (max relative{flips('ddp')})", worst_rank("ddp"), tol))
    if W > 1:
        out.append(Claim("replicas-identical", "DDP leaves the same gradient on every worker as on rank 0, so the "
                                               "replicas stay identical (max relative)", worst_rank("ddp", "vs_rank0"),
                         tol))
        out.append(Claim("clip-then-reduce-differs", f"clip each worker's gradient, then all-reduce ≠ all-reduce, "
                                                     f"then clip (relative; --clip-norm {config.clip_norm:g})",
                         min(r["clip_order"] for r in ranks), DIFFERS, ">="))
    out.append(Claim("reduce-then-clip-equals-single", f"all-reduce, then clip_grad_norm_ ≡ one process's "
                                                       f"clip_grad_norm_, at each of {N} steps (max relative"
                                                       f"{flips('manual+clip')})",
                     worst([*(r["reduce_then_clip_vs_single"] for r in ranks), worst_rank("manual+clip")]), tol))
    if W > 1:
        # Falsifiable, unlike "reducing the norm again gives √W·‖g‖" (arithmetic on equal numbers: a fact in the
        # per-rank table): slices that overlapped or missed a part, or a sum over replicas, would miss ‖g‖.
        single = ranks[0]["norm_single"]
        out.append(Claim("norm-sharded-equals-single", f"each worker's 1/{W} of the flat gradient, its squared norm "
                                                       f"all-reduced: sqrt(Σ_r ‖g_r‖²) ≡ one process's ‖g‖ = "
                                                       f"{single:.6g} (FSDP's reduction, right for sharded "
                                                       f"parameters; max relative, any rank)",
                         max(abs(r["norm_sharded"] - r["norm_single"]) / r["norm_single"] for r in ranks), tol))
    out.append(Claim("no-sync-equals-sync", f"DDP accumulating {K} micro-batches: no_sync() ≡ syncing every "
                                            f"micro-batch ≡ one process, at each of {N} steps (max relative"
                                            f"{flips('ddp no_sync', 'ddp sync every micro-batch')})",
                     worst([worst_rank("ddp no_sync"), worst_rank("ddp sync every micro-batch")]), tol))
    if K > 1:
        every, quiet = ranks[0]["runs"]["ddp sync every micro-batch"], ranks[0]["runs"]["ddp no_sync"]
        out.append(Claim("no-sync-sends-k-times-less", f"bytes all-reduced, syncing every micro-batch ÷ with "
                                                       f"no_sync() ({every['calls']} vs {quiet['calls']} all-reduce "
                                                       f"calls) = K", every["bytes"] / max(quiet["bytes"], 1), K,
                         "=="))
    return out
