"""The exercises of `gradlab ddp`, beside the submission: each exercise's inputs (CASES(seed)) and how a function is
called on them (the harness). The only code of the lesson that runs in the sandbox: torch and
gradlab.practice.harness, nothing else (no reference, no known mistake: those are in checks.py)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.practice.harness import Harness, gloo_harness, loaded

# ---------------------------------------------------------------------------------------------- accumulated_grad

def _model(case: dict) -> torch.nn.Module:
    return loaded(torch.nn.Sequential(torch.nn.Linear(784, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10)),
                   case["weights"])


def _acc_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)  # PyTorch's default init, as a model of the lesson starts
    weights = [p.detach().clone() for p in torch.nn.Sequential(torch.nn.Linear(784, 16), torch.nn.ReLU(),
                                                               torch.nn.Linear(16, 10)).parameters()]
    out = []
    for label, kind, sizes in (("4 equal parts of 25", "equal", [25, 25, 25, 25]),
                               ("2 equal parts of 50", "equal", [50, 50]), ("one part", "equal", [100]),
                               ("unequal parts 64/32/4", "unequal", [64, 32, 4]),
                               ("unequal parts 1/99", "unequal", [1, 99])):
        out.append({"label": label, "kind": kind, "sizes": sizes, "weights": weights,
                    "x": torch.rand(100, 784, generator=g), "y": torch.randint(0, 10, (100,), generator=g),
                    "stale": [torch.randn(w.shape, generator=g) for w in weights]})  # what .grad holds on entry
    return out


def _acc_harness(fn: Callable, case: dict) -> dict:
    model = _model(case)
    for p, stale in zip(model.parameters(), case["stale"], strict=True):
        p.grad = stale.clone()
    grads = fn(model, case["x"], case["y"], list(case["sizes"]))
    return {"grads": [t.detach().clone() for t in grads]}



# --------------------------------------------------------------------------------------------- average_gradients

def _avg_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for label, sizes in (("3 workers, shards 34/33/33", [34, 33, 33]), ("2 workers, shards 90/10", [90, 10]),
                         ("2 equal shards", [50, 50])):
        out.append({"label": label, "kind": "average", "sizes": sizes,
                    "grads": [[torch.randn(5, 3, generator=g, dtype=torch.float64),
                               torch.randn(3, generator=g, dtype=torch.float64)] for _ in sizes]})
    return out


def _avg_args(case: dict) -> list[tuple]:
    """Each worker's arguments: its shard's gradients, its shard's size, the whole batch's size."""
    return [([t.clone() for t in grads], n, sum(case["sizes"])) for grads, n in zip(case["grads"], case["sizes"],
                                                                                   strict=True)]


HARNESSES: dict[str, Harness] = {
    "accumulated_grad": Harness(cases=_acc_cases, call=_acc_harness),
    # on real gloo workers, one forked process per shard meeting on 127.0.0.1; every worker's result comes back
    "average_gradients": gloo_harness(_avg_cases, _avg_args, lambda ranks: {"ranks": ranks}),
}
