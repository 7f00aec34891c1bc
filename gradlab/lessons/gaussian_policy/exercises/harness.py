"""The exercises of `gradlab gaussian-policy`, beside the submission: each exercise's inputs (CASES(seed)) and how a
function is called on them (the harness). The only code of the lesson that runs in the sandbox: torch and
gradlab.practice.harness, nothing else (no reference, no known mistake: those are in checks.py)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.practice.harness import Harness

# --------------------------------------------------------------------------------------------------------- score

def _score_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for label, n, spread in (("two dimensions", 2, 1.0), ("a batch of 64", 64, 1.0), ("small σ", 8, 0.01),
                             ("large σ", 8, 10.0)):
        mu = torch.randn(n, generator=g, dtype=torch.float64)
        sigma = (torch.rand(n, generator=g, dtype=torch.float64) + 0.5) * spread
        out.append({"label": label, "kind": "score", "mu": mu, "sigma": sigma,
                    "a": mu + sigma * torch.randn(n, generator=g, dtype=torch.float64)})
    mu = torch.zeros(3, dtype=torch.float64)
    out.append({"label": "a = μ", "kind": "score", "mu": mu, "sigma": torch.ones(3, dtype=torch.float64),
                "a": mu.clone()})
    return out


def _score_harness(fn: Callable, case: dict) -> dict:
    d_mu, d_sigma = fn(case["a"].clone(), case["mu"].clone(), case["sigma"].clone())
    return {"d_mu": d_mu.detach(), "d_sigma": d_sigma.detach()}


HARNESSES: dict[str, Harness] = {
    "score": Harness(cases=_score_cases, call=_score_harness),
}
