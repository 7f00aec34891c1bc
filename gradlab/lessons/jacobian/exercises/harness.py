"""The exercises of `gradlab jacobian`, beside the submission: each exercise's inputs (CASES(seed)) and how a function
is called on them (the harness). The only code of the lesson that runs in the sandbox: torch and
gradlab.practice.harness, nothing else (no reference, no known mistake: those are in checks.py)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.practice.harness import Harness

# ------------------------------------------------------------------------------------------------- jacobian_loop

def _jac_f(case: dict) -> Callable:
    A = case["A"]
    return lambda v: torch.tanh(A @ v)


def _jac_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    return [{"label": label, "kind": "jacobian", "A": torch.randn(m, n, generator=g, dtype=torch.float64),
             "x": torch.randn(n, generator=g, dtype=torch.float64)}
            for label, m, n in (("3 outputs, 4 inputs", 3, 4), ("one output", 1, 5), ("6 outputs, 2 inputs", 6, 2),
                                ("square 8 × 8", 8, 8))]


def _jac_harness(fn: Callable, case: dict) -> dict:
    return {"J": fn(_jac_f(case), case["x"].clone()).detach()}


HARNESSES: dict[str, Harness] = {
    "jacobian_loop": Harness(cases=_jac_cases, call=_jac_harness),
}
