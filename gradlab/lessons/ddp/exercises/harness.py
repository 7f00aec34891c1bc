"""The exercises of `gradlab ddp`, beside the submission: each exercise's inputs (CASES(seed)) and how a function is
called on them (the harness). The only code of the lesson that runs in the sandbox: torch and
gradlab.kit.harness, nothing else (no reference, no known mistake: those are in checks.py).

The functions that run on every rank of a torch.distributed job run on real gloo workers (gradlab.kit.harness.
gloo_harness: the groups are formed before the submission loads); each rank's result is an output of its own
("rank 0", "rank 1", …), so the diagnosis can say which ranks are right."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.kit.harness import Harness, Returned, default_init, gloo_harness, loaded, tensor_list

# ---------------------------------------------------------------------------------------------- accumulated_grad

def _model(case: dict) -> torch.nn.Module:
    return loaded(torch.nn.Sequential(torch.nn.Linear(784, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10)),
                  case["weights"])


def _acc_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    weights = default_init(torch.nn.Sequential(torch.nn.Linear(784, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10)),
                           torch.Generator().manual_seed(seed))  # PyTorch's default init, as a lesson's model starts

    def data() -> dict:
        return {"weights": weights, "x": torch.rand(100, 784, generator=g),
                "y": torch.randint(0, 10, (100,), generator=g),
                "stale": [torch.randn(w.shape, generator=g) for w in weights]}  # what .grad holds on entry

    out = []
    for label, kind, sizes in (("2 equal parts of 50", "equal", [50, 50]), ("one part", "equal", [100]),
                               ("unequal parts 1/99", "unequal", [1, 99])):
        out.append({"label": label, "kind": kind, "sizes": sizes, **data()})
    same = data()
    out.append({"label": "4 equal parts of 25", "kind": "equal", "sizes": [25, 25, 25, 25], **same,
                "family": "parts", "vary": "for equal micro-batches"})
    out.append({"label": "the same batch in unequal parts 64/32/4", "kind": "unequal", "sizes": [64, 32, 4], **same,
                "family": "parts", "vary": "for unequal ones"})
    return out


def _acc_harness(fn: Callable, case: dict) -> dict:
    model = _model(case)
    for p, stale in zip(model.parameters(), case["stale"], strict=True):
        p.grad = stale.clone()
    got = fn(model, case["x"], case["y"], list(case["sizes"]))
    if len(case["sizes"]) == 1 and isinstance(got, list | tuple) and got and all(g is None for g in got):
        raise Returned(f"what accumulated_grad returned is a list of {len(got)} items, every one None: no backward "
                       f"filled any .grad on this input, one part (sizes = {list(case['sizes'])}). A loop over the "
                       "parts that stops one short (range(len(sizes) - 1)) or starts at 1 runs none when there is "
                       "one part, and leaves a part out when there are more: loop over every part")
    grads = tensor_list(got, "what accumulated_grad returned", 4)
    return {"grads": [t.detach().clone() for t in grads]}


# --------------------------------------------------------------------------------------------- average_gradients

def _avg_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)

    def grads(n: int) -> list:
        return [[torch.randn(5, 3, generator=g, dtype=torch.float64), torch.randn(3, generator=g,
                                                                               dtype=torch.float64)]
                for _ in range(n)]

    out = [{"label": "3 workers, shards 34/33/33", "kind": "average", "sizes": [34, 33, 33], "grads": grads(3)}]
    two = grads(2)
    out.append({"label": "2 workers, shards 90/10", "kind": "average", "sizes": [90, 10], "grads": two,
                "family": "shards", "vary": "for unequal shards"})
    out.append({"label": "the same gradients, equal shards 50/50", "kind": "average", "sizes": [50, 50],
                "grads": two, "family": "shards", "vary": "for equal shards"})
    return out


def _avg_args(case: dict) -> list[tuple]:
    """Each worker's arguments: its shard's gradients, its shard's size, the whole batch's size."""
    n_total = sum(case["sizes"])
    return [([t.clone() for t in grads], n, n_total) for grads, n in zip(case["grads"], case["sizes"], strict=True)]


def by_rank(ranks: list[list[torch.Tensor]]) -> dict:
    """Every rank's result as an output of its own: {"rank 0": [...], "rank 1": [...], …}."""
    return {f"rank {r}": tensors for r, tensors in enumerate(ranks)}


# ------------------------------------------------------------------------------------------------ sync_gradients

def _sync_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for label, world in (("2 workers", 2), ("3 workers", 3), ("4 workers", 4)):
        weights = [torch.randn(3, 5, generator=g), torch.randn(3, generator=g)]
        out.append({"label": label, "kind": "sync", "weights": weights,
                    "grads": [[torch.randn(3, 5, generator=g), torch.randn(3, generator=g)] for _ in range(world)]})
    return out


def _sync_rank(fn: Callable, weights: list, grads: list) -> list:
    """On one rank: a model whose .grad holds this rank's gradients; FN averages them in place over the ranks."""
    model = loaded(torch.nn.Linear(5, 3), weights)
    for p, grad in zip(model.parameters(), grads, strict=True):
        p.grad = grad.clone()
    got = fn(model)
    if got is not None:
        raise Returned(f"sync_gradients returned {type(got).__name__}: it changes each p.grad in place and returns "
                       "nothing")
    return [p.grad if p.grad is not None else torch.full_like(p, float("nan")) for p in model.parameters()]


def _sync_args(case: dict) -> list[tuple]:
    return [(case["weights"], grads) for grads in case["grads"]]


HARNESSES: dict[str, Harness] = {
    "sync_gradients": gloo_harness(_sync_cases, _sync_args, by_rank, run=_sync_rank),
    "accumulated_grad": Harness(cases=_acc_cases, call=_acc_harness),
    "average_gradients": gloo_harness(_avg_cases, _avg_args, by_rank),
}
