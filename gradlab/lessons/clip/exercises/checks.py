"""The exercises of `gradlab clip`, on gradlab's side: each one's reference answer, its known mistakes (a realistic
wrong implementation and what to tell its author) and what the diagnosis measures. Never imported beside a
submission."""

from __future__ import annotations

import torch
import torch.distributed as dist

from gradlab.kit.exercise import Checks, Mistake, Relation, Variant
from gradlab.kit.measure import nonfinite_where_finite
from gradlab.kit.training import global_norm, torch_clip
from gradlab.lessons.clip.exercises.harness import HARNESSES

# ------------------------------------------------------------------------------------------------------ global_norm

def _norm_reference(grads):
    """torch.nn.utils.get_total_norm, what clip_grad_norm_ measures: the norm of the tensors' norms."""
    return torch.nn.utils.get_total_norm(grads)


def _norm_l1(grads):
    return sum(g.abs().sum() for g in grads)


def _norm_no_sqrt(grads):
    return sum((g * g).sum() for g in grads)


def _norm_sum_of_norms(grads):
    return sum(g.norm() for g in grads)


def _norm_rms(grads):
    return torch.cat([g.reshape(-1) for g in grads]).pow(2).mean().sqrt()


GLOBAL_NORM = Checks(
    harness=HARNESSES["global_norm"], reference=_norm_reference,
    mistakes=[
        Mistake(name="L1", fn=_norm_l1,
                diagnosis="you added the absolute values (the L1 norm): the global norm is the L2 norm of every entry "
                          "together, sqrt(Σ_i Σ_j g_ij²)"),
        Mistake(name="no square root", fn=_norm_no_sqrt,
                diagnosis="you returned Σ g², the squared norm: take its square root"),
        Mistake(name="norms added", fn=_norm_sum_of_norms,
                diagnosis="you added the tensors' norms, Σ_i ‖g_i‖: that is larger than the norm of all of them "
                          "together, sqrt(Σ_i ‖g_i‖²) (add the squares, then take one root)"),
        Mistake(name="mean of squares", fn=_norm_rms,
                diagnosis="you took the mean of the squares (an RMS): the global norm sums them, so yours is smaller "
                          "by the square root of the number of entries"),
    ],
    names={"norm": "the global norm"},
    quantities=lambda case: [("√n", sum(g.numel() for g in case["grads"]) ** 0.5,
                              "n, the number of entries of all the tensors"),
                             ("√T", len(case["grads"]) ** 0.5, "T, the number of tensors")],
    hints={("*", "scale", "√n"): "a mean of the squares where their sum belongs",
           ("*", "scale", "1/√T"): "the squared norms of the tensors averaged, not added: sqrt(Σ_i ‖g_i‖²)"})


# ------------------------------------------------------------------------------------------- clip_by_global_norm

def _clip_reference(grads, clip_norm):
    return torch_clip([g.detach() for g in grads], clip_norm)[1]  # torch.nn.utils.clip_grad_norm_


def _clip_formula(grads, clip_norm):
    """tf.clip_by_global_norm's formula, g · clip_norm / max(global_norm, clip_norm), without clip_grad_norm_'s
    + 1e-6 (torch/nn/utils/clip_grad.py: `clip_coef = max_norm / (total_norm + 1e-6)`)."""
    norm = global_norm(grads)
    return [g * (norm.new_tensor(clip_norm) / torch.clamp(norm, min=clip_norm)).to(g.dtype) for g in grads]


def _clip_each(grads, clip_norm):
    return [g * clip_norm / max(float(g.norm()), clip_norm) for g in grads]


def _clip_always(grads, clip_norm):
    norm = float(torch.sqrt(sum((g * g).sum() for g in grads)))
    return [g * clip_norm / norm for g in grads]


def _clip_values(grads, clip_norm):
    return [g.clamp(-clip_norm, clip_norm) for g in grads]


def _clip_extra(outs: list[dict], cases: list[dict]) -> list[float]:
    over = max(float(global_norm(o["grads"])) / c["clip_norm"] for o, c in zip(outs, cases, strict=True))
    cosines = [float(torch.nn.functional.cosine_similarity(torch.cat([t.reshape(-1) for t in o["grads"]]),
                                                           torch.cat([t.reshape(-1) for t in c["grads"]]), dim=0))
               for o, c in zip(outs, cases, strict=True) if float(global_norm(c["grads"])) > 0]
    return [over, min(cosines)]


def _clip_quantities(case: dict) -> list:
    """What a wrong clipping scale may be, as a ratio to the right one: the norm it measured instead."""
    g = case["grads"]
    n2 = float(global_norm(g))
    if n2 == 0:
        return []
    l1 = float(sum(t.double().abs().sum() for t in g))
    each = float(sum(t.double().norm() for t in g))
    n = sum(t.numel() for t in g)
    cap = case["clip_norm"]
    return [("clip_norm/‖g‖", cap / n2, "scaled up to the cap though the norm is below it: divide by "
                                        "max(global_norm, clip_norm), so that a small norm stays as it is"),
            ("‖g‖/clip_norm", n2 / cap, "nothing was clipped though the global norm ‖g‖ is above clip_norm"),
            ("‖g‖/‖g‖₁", n2 / l1, "you measured the size with the L1 norm Σ|g|, not sqrt(Σ g²)"),
            ("‖g‖/Σ‖g_i‖", n2 / each, "you added the tensors' norms, not their squares (then one square root)"),
            ("1/‖g‖", 1 / n2, "the square root is missing: Σ g² is the squared norm"),
            ("√n", n**0.5, "a mean of the squares (an RMS) where their sum belongs")]


def _clip_min(grads, clip_norm):
    norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads))
    return [g * (clip_norm / torch.minimum(norm, torch.tensor(clip_norm, dtype=norm.dtype))).to(g.dtype)
            for g in grads]


CLIP = Checks(
    harness=HARNESSES["clip_by_global_norm"], reference=_clip_reference,
    mistakes=[
        Mistake(name="per tensor", fn=_clip_each,
                diagnosis="you clipped each tensor by its own norm (tf.clip_by_norm): the global norm takes every "
                          "tensor together, sqrt(Σ_i ‖g_i‖²), and one scale serves them all"),
        Mistake(name="always rescaled", fn=_clip_always,
                diagnosis=lambda mine, ref: "you rescaled the gradients to the cap even when their norm was below it"
                + (" (and 0/0 on zero gradients)" if nonfinite_where_finite(mine, ref) else "")
                + ": divide by max(global_norm, clip_norm)"),
        Mistake(name="by value", fn=_clip_values,
                diagnosis="you clipped each element to ±clip_norm (tf.clip_by_value): that changes the direction; "
                          "scale all gradients by one factor instead"),
    ],
    extra=_clip_extra,
    names={"grads": "your clipped gradients"},
    relations=[Relation(what="the gradients scaled by clip_norm / min(global_norm, clip_norm): min where max belongs",
                        fn=_clip_min, hint="divide by max(global_norm, clip_norm): at most 1, so a small norm stays "
                        "and a large one is brought down to the cap")],
    quantities=_clip_quantities,
    hints={("*", "nonfinite", "*"): "NaN on zero gradients is 0/0: divide by max(global_norm, clip_norm), which is "
                                    "never 0"},
    variants=[Variant(what="tf.clip_by_global_norm's formula: the reference, torch.nn.utils.clip_grad_norm_, divides "
                           "by total_norm + 1e-6 (torch/nn/utils/clip_grad.py), a relative 1e-6/‖g‖ smaller when it "
                           "clips", fn=_clip_formula)])


# -------------------------------------------------------------------------------------------- clip_across_ranks

def _ranks_reference(grads, clip_norm):
    total = torch.zeros((), dtype=torch.float64)
    for g in grads:
        total += g.double().pow(2).sum()  # this rank's Σ‖g‖²
    dist.all_reduce(total, op=dist.ReduceOp.SUM)  # Σ over the ranks: the squared global norm
    scale = clip_norm / torch.clamp(total.sqrt(), min=clip_norm)
    return [g * scale.to(g.dtype) for g in grads]


def _ranks_local_fn(grads, clip_norm):
    norm = float(torch.sqrt(sum(g.double().pow(2).sum() for g in grads)))
    return [g * (clip_norm / max(norm, clip_norm)) for g in grads]


def _ranks_norms_added_fn(grads, clip_norm):
    norm = torch.sqrt(sum(g.double().pow(2).sum() for g in grads)).reshape(1)
    dist.all_reduce(norm)
    return [g * (clip_norm / max(float(norm), clip_norm)) for g in grads]


def _ranks_averaged_fn(grads, clip_norm):
    sq = sum(g.double().pow(2).sum() for g in grads).reshape(1)
    dist.all_reduce(sq)
    norm = float(sq / dist.get_world_size()) ** 0.5
    return [g * (clip_norm / max(norm, clip_norm)) for g in grads]


def _ranks_expected(case: dict) -> dict:
    """The whole model's gradients clipped together (clip_grad_norm_ semantics without its + 1e-6), then split
    back into the ranks' shards."""
    every = [t for shard in case["shards"] for t in shard]
    norm = global_norm(every)
    scale = torch.tensor(case["clip_norm"], dtype=torch.float64) / torch.clamp(norm, min=case["clip_norm"])
    return {f"rank {r}": [t * scale for t in shard] for r, shard in enumerate(case["shards"])}


def _ranks_clipped_by(case: dict, norms: list[float]) -> dict:
    cap = case["clip_norm"]
    return {f"rank {r}": [t * (cap / max(n, cap)) for t in shard]
            for r, (shard, n) in enumerate(zip(case["shards"], norms, strict=True))}


def _shard_norm(shard) -> float:
    return float(global_norm(shard))


def _ranks_local(case: dict) -> dict:
    return _ranks_clipped_by(case, [_shard_norm(s) for s in case["shards"]])


def _ranks_norms_added(case: dict) -> dict:
    total = sum(_shard_norm(s) for s in case["shards"])
    return _ranks_clipped_by(case, [total] * len(case["shards"]))


def _ranks_averaged(case: dict) -> dict:
    mean_sq = sum(_shard_norm(s) ** 2 for s in case["shards"]) / len(case["shards"])
    return _ranks_clipped_by(case, [mean_sq**0.5] * len(case["shards"]))


def _ranks_unrooted(case: dict) -> dict:
    total = sum(_shard_norm(s) ** 2 for s in case["shards"])
    return _ranks_clipped_by(case, [total] * len(case["shards"]))


def _factor(yours: list, shard: list) -> float:
    """The one factor f with yours = f · shard (least squares over every entry, in float64)."""
    a = torch.cat([t.double().flatten() for t in yours])
    b = torch.cat([t.double().flatten() for t in shard])
    return float(a @ b) / max(float(b @ b), 1e-300)


def _float32_total(cases: list[dict], mine: list[dict], refs: list[dict]) -> str | None:
    """Whether the squared norm made a float32 tensor before the all-reduce (torch.tensor(total) of a Python float:
    torch's default dtype) gives the student's factor to 1e-12 relative on every input where theirs is off: each
    rank's Σ‖g‖² rounded to float32, summed, rooted in float32."""
    hit = 0
    for case, o, r in zip(cases, mine, refs, strict=True):
        cap, shards = case["clip_norm"], case["shards"]
        parts = [torch.tensor(float(global_norm(sh)) ** 2, dtype=torch.float32) for sh in shards]
        norm = float(torch.stack(parts).sum().sqrt())
        theirs = cap / max(norm, cap)
        for rank, shard in enumerate(shards):
            yours, expected = _factor(o[f"rank {rank}"], shard), _factor(r[f"rank {rank}"], shard)
            if abs(yours - expected) <= 1e-12 * expected:
                continue
            if abs(yours - theirs) > 1e-12 * theirs:
                return None
            hit += 1
    if not hit:
        return None
    return ("the squared norm made a float32 tensor before the all-reduce (torch.tensor(total) of a Python float: "
            "torch's default dtype is float32) gives your factor to 1e-12 on every input where it is off (measured): "
            "make it float64, torch.tensor(total, dtype=torch.float64)")


RANKS = Checks(
    harness=HARNESSES["clip_across_ranks"], reference=_ranks_reference, expected=_ranks_expected,
    mistakes=[
        Mistake(name="own shard's norm", fn=_ranks_local_fn,
                diagnosis="each rank clipped by the norm of its own shard: the global norm is over every rank's "
                          "gradients. all_reduce each rank's Σ‖g‖² (SUM), then take the square root",
                outputs=_ranks_local),
        Mistake(name="norms all-reduced", fn=_ranks_norms_added_fn,
                diagnosis="you all-reduced the ranks' norms, Σ_r ‖g_r‖: norms do not add. all_reduce the squared norms "
                          "Σ‖g‖² and take the square root of the sum", outputs=_ranks_norms_added),
        Mistake(name="averaged", fn=_ranks_averaged_fn,
                diagnosis="you averaged the squared norms over the ranks (ReduceOp.AVG, or / world size): the shards "
                          "hold different parameters, so their squares add up (ReduceOp.SUM)", outputs=_ranks_averaged),
    ],
    quantities=lambda case: _clip_quantities({"grads": [t for s in case["shards"] for t in s],
                                              "clip_norm": case["clip_norm"]}),
    relations=[Relation(what="the gradients clipped with the squared norm Σ‖g‖² as if it were the norm (the square "
                             "root is missing)", outputs=_ranks_unrooted)],
    experiments=[_float32_total])


CHECKS: dict[str, Checks] = {
    "global_norm": GLOBAL_NORM,
    "clip_by_global_norm": CLIP,
    "clip_across_ranks": RANKS,
}
