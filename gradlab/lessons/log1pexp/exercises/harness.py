"""The exercises of `gradlab log1pexp`, beside the submission: each exercise's inputs (CASES(seed)) and how a function
is called on them (the harness). The only code of the lesson that runs in the sandbox: torch and
gradlab.practice.harness, nothing else (no reference, no known mistake: those are in checks.py)."""

from __future__ import annotations

import torch

from gradlab.practice.harness import Harness

# ------------------------------------------------------------------------------------------------------ Log1pExp

POINTS = [-100.0, -20.0, 0.0, 20.0, 88.0, 89.0, 100.0, 1000.0]


def _lpe_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    return [{"label": "x = −100 … 1000, float32", "kind": "float32", "x": torch.tensor(POINTS)},
            {"label": "x = −100 … 1000, float64", "kind": "float64", "x": torch.tensor(POINTS, dtype=torch.float64)},
            {"label": "random x, float64", "kind": "float64", "x": torch.randn(50, generator=g, dtype=torch.float64)
             * 10}]


def _lpe_harness(cls, case: dict) -> dict:
    x = case["x"].clone().requires_grad_(True)
    y = cls.apply(x)
    g, = torch.autograd.grad(y.sum(), x, create_graph=True)
    gg = torch.autograd.grad(g.sum(), x, allow_unused=True)[0] if g.requires_grad else None
    return {"value": y.detach(), "gradient": g.detach(), "second": gg.detach() if gg is not None
            else torch.zeros_like(x.detach())}


HARNESSES: dict[str, Harness] = {
    "Log1pExp": Harness(cases=_lpe_cases, call=_lpe_harness),
}
