"""The exercises of `gradlab ddp`, on gradlab's side: each one's reference answer, its known mistakes (a realistic wrong
implementation and what to tell its author) and what the diagnosis measures. Never imported beside a submission.

The functions that run on every rank have their reference and known mistakes in closed form here (the sums the
all-reduce would make), so the diagnosis starts no worker; the suite checks each closed form against the same
function run on real gloo workers."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F

from gradlab.kit.exercise import Checks, Mistake, Relation, norm_ratio, num
from gradlab.lessons.ddp.exercises.harness import HARNESSES, _model

# ---------------------------------------------------------------------------------------------------------------
# A wrong answer as a weighted sum of parts (micro-batches, ranks): which weights it used
# ---------------------------------------------------------------------------------------------------------------

def weights_of(mine: list[torch.Tensor], parts: list[list[torch.Tensor]]) -> tuple[torch.Tensor, float]:
    """(w, what is left): the least-squares weights with mine ≈ Σ_k w_k · parts_k, and ‖mine − Σ w_k parts_k‖ /
    ‖mine‖ (0 when mine is such a sum)."""
    y = _vector(mine)
    M = torch.stack([_vector(p) for p in parts], dim=1)
    w = torch.linalg.lstsq(M, y.unsqueeze(1)).solution.squeeze(1)
    return w, float((M @ w - y).norm()) / max(float(y.norm()), 1e-300)


def _vector(ts: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.detach().reshape(-1).double() for t in ts]) if ts else torch.zeros(0, dtype=torch.float64)


def name_weights(w: torch.Tensor, candidates: dict[str, list[float]]) -> str | None:
    """The name of the candidate weights (e.g. "n_k/B", "1/K") that W equals, if any."""
    for name, c in candidates.items():
        c = torch.tensor(c, dtype=torch.float64)
        if c.shape == w.shape and torch.allclose(w, c, rtol=1e-3, atol=1e-6 * max(float(c.abs().max()), 1e-12)):
            return name
    return None


def weights_words(w: torch.Tensor) -> str:
    return "(" + ", ".join(num(float(v)) for v in w[:6]) + (", …" if len(w) > 6 else "") + ")"


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


def _acc_zero_grad_in_loop(model, x, y, sizes):
    for xk, yk in zip(x.split(sizes), y.split(sizes), strict=True):
        model.zero_grad()  # inside the loop: each part's backward starts from an emptied .grad
        (F.cross_entropy(model(xk), yk, reduction="sum") / len(x)).backward()
    return [p.grad for p in model.parameters()]


# weights measured -> (the cause that gives them, its fix, the cause applied to the reference): said only where the
# cause, run on the same inputs, gives the student's gradients (an experiment, not a guess)
WEIGHT_CAUSES = {"the last part's n_K/B alone": (
    "zero_grad() inside the loop (or anything else that empties .grad before each part: the values cannot tell "
    "which): each backward starts from an emptied .grad, so only the last part's gradient survives",
    "zero the gradients once, before the loop", _acc_zero_grad_in_loop)}


def _confirmed(name: str | None, cases: list[dict], outs: list[dict]) -> str:
    """The cause of WEIGHT_CAUSES the weights NAME point at, said when it gives the student's gradients OUTS on every
    input (measured), else that it was ruled out."""
    if name not in WEIGHT_CAUSES:
        return ""
    words, fix, fn = WEIGHT_CAUSES[name]
    theirs = [HARNESSES["accumulated_grad"].call(fn, case)["grads"] for case in cases]
    if all(torch.allclose(_vector(o["grads"]), _vector(t), rtol=1e-5, atol=1e-8)
           for o, t in zip(outs, theirs, strict=True)):
        return f"; {words} (measured: applied to the reference, it gives your gradients on every input): {fix}"
    return f"; ruled out by experiment (applied to the reference, it gives other gradients than yours): {words}"


def _acc_parts(case: dict) -> list[list[torch.Tensor]]:
    """ḡ_k, the mean gradient of each micro-batch, and what .grad held on entry: the parts a wrong answer mixes."""
    model = _model(case)
    parts = []
    for xk, yk in zip(case["x"].split(case["sizes"]), case["y"].split(case["sizes"]), strict=True):
        parts.append(list(torch.autograd.grad(F.cross_entropy(model(xk), yk), list(model.parameters()))))
    return [*parts, case["stale"]]


def _acc_weights(cases: list[dict], outs: list[dict], refs: list[dict]) -> str | None:
    """Measured: yours = Σ_k w_k ḡ_k + s · (what .grad held), with the weights named when they are a known rule."""
    said = {}
    for case, o, r in zip(cases, outs, refs, strict=True):
        if norm_ratio(o, r) == 1 and torch.allclose(torch.cat([t.reshape(-1) for t in o["grads"]]),
                                                    torch.cat([t.reshape(-1) for t in r["grads"]]), rtol=1e-5):
            continue
        w, left = weights_of(o["grads"], _acc_parts(case))
        if left > 1e-4:
            said.setdefault("not a weighted sum of the micro-batches' gradients (the parts you used are not the "
                            "slices sizes gives: x.split(sizes))", []).append(case["label"])
            continue
        n, B, K = torch.tensor(case["sizes"], dtype=torch.float64), sum(case["sizes"]), len(case["sizes"])
        stale = float(w[-1])
        last = torch.zeros(K, dtype=torch.float64)
        last[-1] = n[-1] / B
        name = name_weights(w[:-1], {"n_k/B (right)": (n / B).tolist(), "1/K": [1 / K] * K, "1": [1.0] * K,
                                     "n_k (a sum, not divided by B)": n.tolist(), "1/B": [1 / B] * K,
                                     "the last part's n_K/B alone": last.tolist()})
        words = f"w_k = {name}" if name else f"w = {weights_words(w[:-1])} where n_k/B = {weights_words(n / B)}"
        if abs(stale) > 1e-4:
            words += f", plus {num_words(stale)} × what .grad held on entry"
        said.setdefault(words, []).append(case["label"])
    if not said:
        return None
    named = [n for n in WEIGHT_CAUSES if f"w_k = {n}" in said]
    return "measured as a weighted sum of the micro-batches' mean gradients ḡ_k, yours = Σ_k w_k ḡ_k with " + \
        "; ".join(f"{words} (on {', '.join(repr(x) for x in labels[:2])}{' …' if len(labels) > 2 else ''})"
                  for words, labels in said.items()) + "; the whole batch's gradient is Σ_k (n_k/B) ḡ_k" + \
        "".join(_confirmed(n, cases, outs) for n in named)


def num_words(v: float) -> str:
    return f"{v:.3g}"


ACCUMULATE = Checks(
    harness=HARNESSES["accumulated_grad"], reference=_acc_reference,
    mistakes=[
        Mistake(name="/K forgotten", fn=_acc_no_k,
                diagnosis=lambda s, r: f"your gradient is {norm_ratio(s, r):.3g} times the full batch's (K times, "
                                       f"for K equal parts): .backward() adds the K gradients: sum the "
                                       f"per-sample losses (reduction='sum') and divide by B (a part's mean ÷ K is "
                                       f"right only when the parts are equal)"),
        Mistake(name="mean of means", fn=_acc_mean_of_means,
                diagnosis="right for equal parts, wrong for unequal ones: each micro-batch's loss was normalised by "
                          "its own size and then by K, so 4 samples weigh as much as 64. Sum the per-sample losses "
                          "(reduction='sum') and divide by B, the whole batch's size"),
        Mistake(name="no zero_grad", fn=_acc_no_zero_grad,
                diagnosis="your gradients piled up on what .grad held before: call model.zero_grad() (or set each "
                          ".grad to None) before the first backward"),
    ],
    names={"grads": "your accumulated gradient"},
    quantities=lambda case: [("B", sum(case["sizes"]), "the batch size")],
    experiments=[_acc_weights],
    hints={("*", "scale", "B"): "reduction='sum' needs the division by B, the whole batch's size",
           ("*", "family", "parts:for equal micro-batches"): "each part must weigh n_k/B: sum the per-sample losses "
                                                             "(reduction='sum') of the slices x.split(sizes) and "
                                                             "divide by B"})


# --------------------------------------------------------------------------------------------- average_gradients

def _avg_reference(grads, n_local, n_total):
    out = [g * (n_local / n_total) for g in grads]  # (n_r / B) · ḡ_r, then the sum over the workers
    for t in out:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return out


def _weighted(case: dict, weights: list[list[float]]) -> dict:
    """Rank r returns Σ_s weights[r][s] · ḡ_s: what an all-reduce of weighted gradients leaves on each rank."""
    return {f"rank {r}": [sum(w * case["grads"][s][j] for s, w in enumerate(row))
                          for j in range(len(case["grads"][0]))] for r, row in enumerate(weights)}


def _avg_rule(case: dict, rule) -> dict:
    n, B, R = case["sizes"], sum(case["sizes"]), len(case["sizes"])
    return _weighted(case, [[rule(n[s], B, R) for s in range(R)] for _ in range(R)])


def _avg_expected(case: dict) -> dict:
    return _avg_rule(case, lambda n, B, R: n / B)


def _avg_equal_weights(grads, n_local, n_total):
    out = [g.clone() for g in grads]
    for t in out:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return [t / dist.get_world_size() for t in out]


def _avg_local(grads, n_local, n_total):
    return [g.clone() for g in grads]


def _avg_summed(grads, n_local, n_total):
    out = [g.clone() for g in grads]
    for t in out:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return out


def _avg_own(case: dict) -> dict:
    R = len(case["sizes"])
    return _weighted(case, [[float(r == s) for s in range(R)] for r in range(R)])


def _avg_weights(cases: list[dict], outs: list[dict], refs: list[dict]) -> str | None:
    """Measured: each rank's result = Σ_s w_s ḡ_s, with the weights named when they are a known rule."""
    said, right_on_zero_only, rounded = {}, True, []
    for case, o, r in zip(cases, outs, refs, strict=True):
        n = torch.tensor(case["sizes"], dtype=torch.float64)
        B, R = float(n.sum()), len(n)
        for rank in range(R):
            key = f"rank {rank}"
            mine = o.get(key)
            if mine is None:
                continue
            exact = torch.allclose(torch.cat([t.reshape(-1) for t in mine]),
                                   torch.cat([t.reshape(-1) for t in r[key]]), rtol=1e-9, atol=1e-12)
            right_on_zero_only &= exact == (rank == 0)
            if exact:
                continue
            w, left = weights_of(mine, case["grads"])
            if left > 1e-6:
                said.setdefault("not a weighted sum of the workers' gradients", []).append(case["label"])
                continue
            own = torch.zeros(R, dtype=torch.float64)
            own[rank] = 1.0
            name = name_weights(w, {"n_r/B (right)": (n / B).tolist(), "1/W (equal weights)": [1 / R] * R,
                                    "1 (a plain sum)": [1.0] * R, "1/B (n_r missing)": [1 / B] * R,
                                    "B/n_r (the fraction upside down)": (B / n).tolist(),
                                    "0 (nothing: n_local // n_total is 0)": [0.0] * R,
                                    "n_r/(B·W) (averaged twice)": (n / B / R).tolist(),
                                    "its own gradient alone (no all-reduce reached it)": own.tolist(),
                                    "its own n_r/B alone (no all-reduce reached it)": (own * n / B).tolist()})
            if name == "n_r/B (right)":  # the weights are right: what is left is rounding, said by the diagnosis
                rounded.append(f"{case['label']}, rank {rank}")
                continue
            words = f"w_r = {name}" if name else f"w = {weights_words(w)} where n_r/B = {weights_words(n / B)}"
            said.setdefault(words, []).append(f"{case['label']}, rank {rank}")
    if right_on_zero_only:
        return ("right on rank 0 only: dist.reduce(t, dst=0) leaves the sum on one rank; dist.all_reduce leaves it "
                "on every rank")
    if not said:
        return ("measured on each rank as Σ_r w_r ḡ_r over the workers' gradients, yours has the right weights, "
                "w_r = n_r/B: what differs is not the weights but the numbers' rounding") if rounded else None
    return "measured on each rank as Σ_r w_r ḡ_r over the workers' gradients, yours has " + "; ".join(
        f"{words} (on {', '.join(repr(x) for x in labels[:2])}{' …' if len(labels) > 2 else ''})"
        for words, labels in said.items()) + "; the whole batch's gradient has w_r = n_r/B"


def _avg_quantities(case: dict) -> list:
    return [("W", len(case["sizes"]), "the number of workers")]


AVERAGE = Checks(
    harness=HARNESSES["average_gradients"], reference=_avg_reference, expected=_avg_expected,
    mistakes=[
        Mistake(name="equal weights", fn=_avg_equal_weights,
                diagnosis="you averaged the shards with equal weights (all_reduce, then / W, or ReduceOp.AVG): right "
                          "for equal shards only. Weigh each worker's gradient by n_r / B before the all-reduce",
                outputs=lambda case: _avg_rule(case, lambda n, B, R: 1 / R)),
        Mistake(name="no all-reduce", fn=_avg_local,
                diagnosis="every worker returned its own gradient unchanged: the all-reduce did not reach what you "
                          "returned (no dist.all_reduce, or it ran on a new tensor: `g = g * w` in a loop rebinds g, "
                          "and the list still holds the old tensors). Return the tensors you all-reduced",
                outputs=_avg_own),
        Mistake(name="sum of means", fn=_avg_summed,
                diagnosis="you added the workers' mean gradients without weights: the result is about W times too "
                          "large. Multiply each by n_r / B before the all-reduce",
                outputs=lambda case: _avg_rule(case, lambda n, B, R: 1.0)),
    ],
    names={f"rank {r}": f"rank {r}'s result" for r in range(3)},
    quantities=_avg_quantities,
    experiments=[_avg_weights],
    hints={("*", "family", "shards:for equal shards"): "equal weights are right only when the shards are equal: "
                                                       "weigh each worker's gradient by n_r/B"})


# ------------------------------------------------------------------------------------------------ sync_gradients

def _sync_reference(model):
    for p in model.parameters():
        dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)  # Σ over the ranks, in place
        p.grad /= dist.get_world_size()  # the mean: what DDP leaves in .grad


def _sync_expected(case: dict) -> dict:
    W = len(case["grads"])
    mean = [sum(g[j] for g in case["grads"]) / W for j in range(2)]
    return {f"rank {r}": [t.clone() for t in mean] for r in range(W)}


def _sync_summed(model):
    for p in model.parameters():
        dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)


def _sync_copy(model):
    for p in model.parameters():
        g = p.grad.clone()
        dist.all_reduce(g, op=dist.ReduceOp.SUM)
        g /= dist.get_world_size()  # never written back into p.grad


def _sync_divided(model):
    for p in model.parameters():
        p.grad /= dist.get_world_size()


def _sync_first_only(case: dict) -> dict:
    """The first parameter's .grad averaged, the others left as each rank's own (a return inside the loop)."""
    mean, own = _sync_rule(case, lambda r, s, W: 1 / W), _sync_rule(case, lambda r, s, W: float(r == s))
    return {rank: [mean[rank][0], *own[rank][1:]] for rank in mean}


def _sync_rule(case: dict, weights) -> dict:
    W = len(case["grads"])
    return {f"rank {r}": [sum(weights(r, s, W) * case["grads"][s][j] for s in range(W)) for j in range(2)]
            for r in range(W)}


SYNC = Checks(
    harness=HARNESSES["sync_gradients"], reference=_sync_reference, expected=_sync_expected,
    mistakes=[
        Mistake(name="summed", fn=_sync_summed,
                diagnosis="both (all) workers' gradients were summed, not averaged: all_reduce adds them, and DDP "
                          "divides by the world size (its gradient is the mean over the ranks). Divide .grad by "
                          "dist.get_world_size() after the all-reduce",
                outputs=lambda case: _sync_rule(case, lambda r, s, W: 1.0)),
        # named by what is measured: a reduced copy of .grad and a reduced p.data leave the same gradients
        Mistake(name=".grad never reduced", fn=_sync_copy,
                diagnosis="each rank's .grad is its own gradient, unchanged (measured): the all-reduce never reached "
                          "p.grad (it reduced another tensor, a copy such as p.grad.clone() or p.data, the weights: "
                          "the gradients cannot tell which). all_reduce p.grad itself (it works in place), or assign "
                          "p.grad = g",
                outputs=lambda case: _sync_rule(case, lambda r, s, W: float(r == s))),
        Mistake(name="no all-reduce", fn=_sync_divided,
                diagnosis="each rank divided its own gradient by the world size, but the gradients were never added "
                          "across the ranks: dist.all_reduce(p.grad) first, then divide",
                outputs=lambda case: _sync_rule(case, lambda r, s, W: float(r == s) / W)),
    ],
    names={f"rank {r}": f"rank {r}'s .grad" for r in range(4)},
    relations=[Relation(what="the first parameter's .grad averaged and every other one left as the rank's own (the "
                        "loop stopped after its first parameter: a return inside it?)", outputs=_sync_first_only,
                        hint="all_reduce and divide every parameter's .grad: return after the loop, not in it")],
    quantities=lambda case: [("W", len(case["grads"]), "the number of workers")],
    hints={("*", "scale", "W"): "all_reduce(SUM) adds the W workers' gradients: divide by W for their mean"})


CHECKS: dict[str, Checks] = {
    "sync_gradients": SYNC,
    "accumulated_grad": ACCUMULATE,
    "average_gradients": AVERAGE,
}
