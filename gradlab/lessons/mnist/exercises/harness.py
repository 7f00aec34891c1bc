"""The exercises of `gradlab mnist`, beside the submission: each exercise's inputs (CASES(seed)) and how a function is
called on them (the harness). The only code of the lesson that runs in the sandbox: torch and
gradlab.practice.harness, nothing else (no reference, no known mistake: those are in checks.py)."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from gradlab.practice.harness import Harness

# ------------------------------------------------------------------------------------------------------ sgd_step

def _sgd_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for label, batch, scale, lr in (("batch of 100", 100, 0.01, 0.5), ("one sample", 1, 0.01, 0.5),
                                    ("zero init (the tutorial's)", 50, 0.0, 0.01), ("lr = 0", 20, 0.01, 0.0),
                                    ("large weights", 30, 1.0, 0.1)):
        x = torch.rand(batch, 784, generator=g)
        y = F.one_hot(torch.randint(0, 10, (batch,), generator=g), 10).float()
        out.append({"label": label, "kind": "step", "W": torch.randn(784, 10, generator=g) * scale,
                    "b": torch.randn(10, generator=g) * scale, "x": x, "y": y, "lr": lr})
    # float64: free-running float32 runs that add in a different order drift apart over the steps (gradlab ddp)
    xs = torch.rand(20, 50, 784, generator=g, dtype=torch.float64)
    ys = F.one_hot(torch.randint(0, 10, (20, 50), generator=g), 10).double()
    out.append({"label": "20 steps of training from zero (float64)", "kind": "train",
                "W": torch.zeros(784, 10, dtype=torch.float64), "b": torch.zeros(10, dtype=torch.float64),
                "xs": xs, "ys": ys, "lr": 0.5})
    return out


def _sgd_harness(fn: Callable, case: dict) -> dict:
    W, b = case["W"].clone(), case["b"].clone()
    batches = [(case["x"], case["y"])] if case["kind"] == "step" else list(zip(case["xs"], case["ys"], strict=True))
    for x, y in batches:
        got = fn(W.clone().requires_grad_(True), b.clone().requires_grad_(True), x, y, case["lr"])
        W, b = (t.detach() for t in got)
    return {"W": W, "b": b}



# -------------------------------------------------------------------------------------------------- softmax_grad

def _grad_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for label, batch, scale, dtype in (("batch of 100", 100, 0.01, torch.float32), ("one sample", 1, 0.01,
                                       torch.float32), ("zero weights", 50, 0.0, torch.float32),
                                       ("large weights: a saturated softmax", 30, 3.0, torch.float64),
                                       ("float64", 64, 0.1, torch.float64)):
        out.append({"label": label, "kind": "grad", "W": torch.randn(784, 10, generator=g, dtype=dtype) * scale,
                    "b": torch.randn(10, generator=g, dtype=dtype) * scale,
                    "x": torch.rand(batch, 784, generator=g, dtype=dtype),
                    "y": F.one_hot(torch.randint(0, 10, (batch,), generator=g), 10).to(dtype)})
    return out


def _grad_harness(fn: Callable, case: dict) -> dict:
    gW, gb = fn(case["W"].clone(), case["b"].clone(), case["x"], case["y"])
    return {"gW": gW.detach(), "gb": gb.detach()}


HARNESSES: dict[str, Harness] = {
    "sgd_step": Harness(cases=_sgd_cases, call=_sgd_harness),
    "softmax_grad": Harness(cases=_grad_cases, call=_grad_harness),
}
