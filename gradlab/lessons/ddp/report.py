"""gradlab ddp, the report: the tables, curves and metrics of a run, built from what this process (ddp_single) and
the ranks (ddp_ranks) measured. Nothing here computes a gradient."""

from __future__ import annotations

import math
import os

from gradlab.kit.result import Column, Curve, Table
from gradlab.lessons.ddp.ranks import WAYS
from gradlab.lessons.ddp.settings import Config
from gradlab.lessons.ddp.single import FORGOT_K, MEAN_K, SUM_B, Accumulated


def metrics(config: Config, acc: Accumulated, ranks: list[dict], launch: dict) -> dict:
    return {"job": launch, "micro_batch_sizes": acc.sizes, "shard_sizes": [r["shard"] for r in ranks],
            "accumulation": {"weights_vs_full": acc.weights_vs_full,
                             "norm_ratio": acc.norm_ratio, "forgot_k_vs_k_g": acc.forgot_k,
                             "mean_of_means_vs_full": acc.mean_k, "wall_s": acc.wall_s},
            "forgotten_k_by_optimizer": acc.optimizers, "single_process_s": acc.single_s, "ranks": ranks}


def tables(config: Config, acc: Accumulated, ranks: list[dict], launch: dict) -> list[Table]:
    return [accumulation_table(config, acc), optimizers_table(acc), per_rank_table(config, ranks, launch),
            speed_table(config, acc, ranks)]


def accumulation_table(config: Config, acc: Accumulated) -> Table:
    K, B, N = len(acc.sizes), config.batch_size, config.steps
    sizes = "/".join(map(str, acc.sizes))
    ratio = {recipe: f"{min(r):.6g} … {max(r):.6g}" if f"{min(r):.6g}" != f"{max(r):.6g}" else f"{r[0]:.6g}"
             for recipe, r in acc.norm_ratio.items()}
    rows = [["one backward over the whole batch", "g (the reference)", "1", 0.0, 0.0],
            ["loss_k / K", "Σ ḡ_k / K", ratio[MEAN_K], max(acc.mean_k), acc.weights_vs_full[MEAN_K]],
            ["loss_k (the /K forgotten)", "Σ ḡ_k", ratio[FORGOT_K], None, None],
            ["Σ ℓ_i / B", "Σ_k Σ_i ∇ℓ_i / B", ratio[SUM_B], max(acc.sum_b), acc.weights_vs_full[SUM_B]]]
    return Table(f"accumulation, one process: batch {B} in {K} micro-batches ({sizes})",
                 [Column(header="each micro-batch's loss"), Column(header="accumulated gradient"),
                  Column(header="‖accumulated‖ / ‖g‖"), Column(header="vs g (max rel)", format=".3g"),
                  Column(header=f"free-running: weights after {N} steps vs full", format=".3g")], rows,
                 note="relative: max |a − b| / max |b|. Every recipe's gradient is computed at the "
                      "full-batch run's weights at every step (‖·‖ ratio: range over the steps). "
                      "Free-running: each recipe trained on its own weights; in float32 a different "
                      "summation order changes the last bits, and a ReLU input sitting at 0 can flip, "
                      "so runs may drift apart far beyond rounding (not a claim)")


def per_rank_table(config: Config, ranks: list[dict], launch: dict) -> Table:
    W = len(ranks)
    clipping = (f"--clip-norm {config.clip_norm:g}: below the local norms, so clipping acts before and after the "
                f"reduction. " if min(r["shard_norm"] for r in ranks) > config.clip_norm else "")
    return Table(f"data parallel: {W} worker{'s' * (W > 1)} ({launch['mode']}, {launch['backend']}, rendezvous "
                 f"{launch['rendezvous']})",
                 [Column(header="rank"), Column(header="shard"), Column(header="‖ḡ_r‖ (local)", format=".6g"),
                  Column(header="‖g‖ after all-reduce", format=".9g"),
                  Column(header="‖g‖ reduced again ÷ ‖g‖", format=".6g"),
                  Column(header="all_reduce/W vs g", format=".3g"),
                  Column(header="DDP gradient vs rank 0", format=".3g")],
                 [[r["rank"], r["shard"], r["shard_norm"], r["norm"], r["norm_twice"] / r["norm"],
                   r["naive_vs_full"], r["runs"]["ddp"]["vs_rank0"]] for r in ranks],
                 note=f"{clipping}Reduced again: sqrt(all_reduce(SUM, ‖g‖²)) on gradients every worker already "
                      f"holds whole = √W·‖g‖ (√{W} = {math.sqrt(W):.6g}), by arithmetic: a fact, not a claim; the "
                      f"same reduction over 1/W slices gives ‖g‖ (the sharded-norm claim)")


def optimizers_table(acc: Accumulated) -> Table:
    K = len(acc.sizes)
    optimizer_rows = [[o["optimizer"], o["lr"], o["first_step_ratio"], o["apart"], o["loss_right"], o["loss_forgot"]]
                      for o in acc.optimizers]
    steps = acc.optimizers[0]["steps"]
    return Table(f"the /K forgotten (a gradient {K}× too large), by optimizer: two runs of {steps} steps from "
                 f"the same weights, loss_k/K and loss_k (measured, not claimed)",
                 [Column(header="optimizer"), Column(header="lr", format="g"),
                  Column(header="first step: ‖Δθ‖ ÷ right", format=".6g"),
                  Column(header="runs apart (÷ distance travelled)", format=".3g"),
                  Column(header=f"loss after {steps}: right", format=".4f"),
                  Column(header="/K forgotten", format=".4f")],
                 optimizer_rows,
                 note="SGD's step is lr·g: K× the gradient, K× the step. Adam (lr·m̂/(√v̂ + ε)) and torch's "
                      "RMSprop (lr·g/(√v + ε), v from 0) divide by a running RMS of the gradient, which grows "
                      "K× too: their step barely changes (but for ε), which is why the bug hides. Runs apart: "
                      "‖θ_forgot − θ_right‖ ÷ ‖θ_right − θ₀‖ after the last step; loss: on the last batch")


def speed_table(config: Config, acc: Accumulated, ranks: list[dict]) -> Table:
    K, B, N, W = len(acc.sizes), config.batch_size, config.steps, len(ranks)
    speed_rows = [["1 process", 1, N * B / acc.single_s, None, None, None, None]]
    for way in WAYS:
        rs = [r["runs"][way.key] for r in ranks]
        wall = max(r["wall_s"] for r in rs)
        comm = sum(r["comm_s"] for r in rs) / W
        speed_rows.append([way.label.replace("K", str(K)), W, N * B / wall, 1000 * comm / N, comm / wall,
                           rs[0]["calls"], rs[0]["bytes"] / 1e6, rs[0]["flips"]])
    speed_rows[0].append(sum(acc.flipped))
    return Table("speed: samples/s and time in communication (measured, not claimed)",
                 [Column(header="run"), Column(header="W"), Column(header="samples/s", format=",.0f"),
                  Column(header="comm ms/step", format=".2f"), Column(header="comm %", format=".0%"),
                  Column(header="all-reduces"), Column(header="MB", format=".2f"), Column(header="ReLU flips")],
                 speed_rows,
                 note=f"samples/s: global-batch samples per second of each run's training steps ({N} steps of {B} "
                      f"samples). {os.cpu_count()} CPU cores here, shared by {W} worker{'s' * (W > 1)} and this "
                      f"process (which runs the one-process reference beside them): on a model this small the work "
                      f"per step is tiny, so W processes on the same cores mostly add waiting (for a core, and for "
                      f"every all-reduce through the loopback sockets) and can come out slower than one process "
                      f"(compare the first row with the others: a busy machine moves all of them). Data "
                      f"parallelism pays when each worker has a GPU or machine of its own and computing a step "
                      f"costs far more than sending its gradient. comm: time inside all_reduce "
                      f"(manual) or from a bucket's all-reduce call to its completion (DDP, overlapping backward), "
                      f"mean over workers; all-reduces and MB sent: per worker (DDP: counted by a comm hook). "
                      f"The runs copy the reference's weights before each step: that copy is not timed. ReLU "
                      f"flips: steps on which a ReLU input's sign differed from the whole batch's forward pass "
                      f"(1 process: any accumulation recipe)")


def curves(config: Config, acc: Accumulated, ranks: list[dict]) -> dict[str, Curve]:
    """The loss of the runs that agree (on top of each other, by design), and the splits that do not: the gradient
    each accumulation recipe gives, measured against the whole batch's at every step."""
    x = list(range(1, config.steps + 1))
    W, K = len(ranks), len(acc.sizes)
    series = {"1 process, whole batch": acc.loss["full"],
              f"accumulated, {'Σ ℓ / B' if config.uneven else 'loss_k / K'}":
                  acc.loss[SUM_B if config.uneven else MEAN_K],
              f"{W} worker{'s' * (W > 1)}, manual all_reduce": ranks[0]["runs"]["manual"]["loss"],
              f"{W} worker{'s' * (W > 1)}, DDP": ranks[0]["runs"]["ddp"]["loss"]}
    if config.uneven:
        series["accumulated, mean of means (wrong)"] = acc.loss[MEAN_K]
    mean_k = "loss_k / K, unequal parts: the mean of means (wrong)" if config.uneven else "loss_k / K"
    ratios = {f"loss_k, the /K forgotten (K = {K})": acc.norm_ratio[FORGOT_K], mean_k: acc.norm_ratio[MEAN_K],
              "Σ ℓ_i / B": acc.norm_ratio[SUM_B]}
    return {"training loss per step": Curve("step", "loss on the global batch", x, series),
            "accumulated gradient vs the whole batch's": Curve(
                "step", "‖accumulated gradient‖ / ‖g‖", x, ratios,
                refs={"= ‖g‖ (right)": 1.0, f"= K·‖g‖ (the /K forgotten), K = {K}": float(K)})}
