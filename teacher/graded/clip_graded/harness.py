"""How clip_by_norm is called, and on which inputs: the only file of the exercise that runs beside the student's code
(torch, the standard library and gradlab.kit.harness only; the reference is in checks.py).

Every case is there on every seed (a course draws a fresh one): the seed draws the numbers, never which slices are
above clip_norm or zero."""

from collections.abc import Callable

import torch

from gradlab.kit.harness import Harness, Returned, tensor_out


def _with_norms(g: torch.Generator, shape: tuple, axes: tuple, norms: list[float], dtype) -> torch.Tensor:
    """A random tensor of SHAPE whose slices along AXES have the given NORMS (in order), each times a drawn 0.9–1.1."""
    t = torch.randn(shape, generator=g, dtype=torch.float64)
    n = t.pow(2).sum(dim=axes, keepdim=True).sqrt()
    want = torch.tensor(norms, dtype=torch.float64).reshape(n.shape)
    want = want * (0.9 + 0.2 * torch.rand(n.shape, generator=g, dtype=torch.float64))
    return (t / n * want).to(dtype)


def _cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    f32, f64 = torch.float32, torch.float64
    rows = _with_norms(g, (6, 5), (1,), [0.3, 2.5, 0.7, 4.0, 1.6, 0.1], f32)
    zero_row = rows.clone()
    zero_row[2] = 0.0
    out = [
        {"label": "(6, 5), axes=(1,): rows above and below clip_norm 1", "kind": "float32", "t": rows,
         "clip_norm": 1.0, "axes": (1,), "family": "zero", "vary": "without a zero row"},
        {"label": "the same with row 2 all zero", "kind": "float32", "t": zero_row, "clip_norm": 1.0, "axes": (1,),
         "family": "zero", "vary": "with an all-zero row"},
        {"label": "(6, 5), axes=(0,): columns, clip_norm 1", "kind": "float64", "clip_norm": 1.0, "axes": (0,),
         "t": _with_norms(g, (6, 5), (0,), [0.5, 3.0, 1.2, 0.2, 2.0], f64)},
        {"label": "(3, 4, 5), axes=(1, 2): a norm per (4, 5) slice, clip_norm 2", "kind": "float32",
         "clip_norm": 2.0, "axes": (1, 2), "t": _with_norms(g, (3, 4, 5), (1, 2), [5.0, 1.0, 3.0], f32)},
        {"label": "(4, 6), axes=(0, 1): the whole tensor, clip_norm 1", "kind": "float64", "clip_norm": 1.0,
         "axes": (0, 1), "t": _with_norms(g, (4, 6), (0, 1), [3.0], f64)},
        {"label": "(2, 3, 4), axes=(-1,): norms in the thousands, clip_norm 100", "kind": "float32",
         "clip_norm": 100.0, "axes": (-1,),
         "t": _with_norms(g, (2, 3, 4), (-1,), [3000.0, 50.0, 800.0, 2000.0, 20.0, 5000.0], f32)},
        {"label": "(5, 3), axes=(1,): every row below clip_norm 5", "kind": "float64", "clip_norm": 5.0,
         "axes": (1,), "t": _with_norms(g, (5, 3), (1,), [1.0, 2.0, 3.0, 4.0, 0.5], f64)},
        {"label": "a (4, 3) tensor of zeros, axes=(1,)", "kind": "float32", "clip_norm": 1.0, "axes": (1,),
         "t": torch.zeros(4, 3)},
    ]
    for case in out:  # an upstream gradient that is not 1 anywhere
        case["dy"] = (torch.rand(case["t"].shape, generator=g, dtype=torch.float64) + 0.5).to(case["t"].dtype) * (
            torch.where(torch.rand(case["t"].shape, generator=g) < 0.3, -1.0, 1.0).to(case["t"].dtype))
    return out


def _call(fn: Callable, case: dict) -> dict:
    """fn(t, clip_norm, axes) differentiated by autograd: its value and its gradient for the upstream dy."""
    t = case["t"].clone().requires_grad_(True)
    y = tensor_out(fn(t, case["clip_norm"], tuple(case["axes"])), "what clip_by_norm returned")
    if y.shape != t.shape:
        raise Returned(f"clip_by_norm returned a tensor of shape {tuple(y.shape)} for t of shape {tuple(t.shape)}")
    if not y.requires_grad:
        raise Returned("clip_by_norm's output has no graph to t: compute it from t with torch operations (no "
                       ".detach(), no torch.no_grad(), no .item())")
    g, = torch.autograd.grad(y, t, grad_outputs=case["dy"])
    return {"value": y.detach(), "gradient": g}


HARNESSES = {"clip_by_norm": Harness(cases=_cases, call=_call)}
