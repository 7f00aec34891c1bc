"""The exercises of `gradlab log1pexp`, beside the submission: each exercise's inputs (CASES(seed)) and how a function
is called on them (the harness). The only code of the lesson that runs in the sandbox: torch and
gradlab.kit.harness, nothing else (no reference, no known mistake: those are in checks.py).

Every input carries an upstream gradient dy (random, or ones in one member of a family: a backward that forgets to
multiply by dy is right only there) and a direction v for the second derivative."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.kit.harness import Harness, Returned, function_outputs, tensor_out

POINTS = [-100.0, -20.0, -3.0, 0.0, 1.0, 20.0, 20.5, 30.0, 88.0, 89.0, 100.0, 1000.0]


def _cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)

    def around_one(n: int, dtype) -> torch.Tensor:  # an upstream gradient that is not 1 anywhere
        return (torch.rand(n, generator=g, dtype=torch.float64) + 0.5).to(dtype) * torch.where(
            torch.rand(n, generator=g) < 0.3, -1.0, 1.0).to(dtype)

    x32, x64 = torch.tensor(POINTS), torch.tensor(POINTS, dtype=torch.float64)
    dy, v = around_one(len(POINTS), torch.float64), around_one(len(POINTS), torch.float64)
    xr = torch.randn(50, generator=g, dtype=torch.float64) * 10
    return [
        {"label": "x = −100 … 1000, float32", "kind": "float32", "x": x32, "dy": dy.float(), "v": v.float(),
         "family": "precision", "vary": "in float32"},
        {"label": "x = −100 … 1000, float64", "kind": "float64", "x": x64, "dy": dy, "v": v, "family": "precision",
         "vary": "in float64"},
        {"label": "random x, float64, dy = 1", "kind": "float64", "x": xr, "dy": torch.ones_like(xr),
         "v": torch.ones_like(xr), "family": "upstream", "vary": "when dy = 1"},
        {"label": "random x, float64, random dy", "kind": "float64", "x": xr, "dy": around_one(50, torch.float64),
         "v": around_one(50, torch.float64), "family": "upstream", "vary": "for another upstream gradient dy"},
    ]


def _lpe_harness(cls, case: dict) -> dict:
    return function_outputs(cls, [case["x"]], case["dy"], [case["v"]], "Log1pExp")


def _softplus_harness(fn: Callable, case: dict) -> dict:
    """A plain function, differentiated by autograd: its value and its gradient (for the upstream gradient dy)."""
    if isinstance(fn, type):
        raise Returned("softplus is a class: this exercise asks for a plain function of x, which autograd "
                       "differentiates")
    x = case["x"].clone().requires_grad_(True)
    y = tensor_out(fn(x), "what softplus returned")
    if y.shape != x.shape:
        raise Returned(f"softplus returned a tensor of shape {tuple(y.shape)} for x of shape {tuple(x.shape)}")
    if not y.requires_grad:
        raise Returned("softplus's output has no graph to x: compute it from x with torch operations (no .detach(),"
                       " no torch.no_grad())")
    g, = torch.autograd.grad(y, x, grad_outputs=case["dy"])
    return {"value": y.detach(), "gradient": g}


HARNESSES: dict[str, Harness] = {
    "softplus": Harness(cases=_cases, call=_softplus_harness),
    "Log1pExp": Harness(cases=_cases, call=_lpe_harness),
}
