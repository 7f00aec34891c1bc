"""The exercises of `gradlab clip`, beside the submission: each exercise's inputs (CASES(seed)) and how a function is
called on them (the harness). The only code of the lesson that runs in the sandbox: torch and
gradlab.kit.harness, nothing else (no reference, no known mistake: those are in checks.py)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.kit.harness import (
    CHANGED,
    Harness,
    Returned,
    changed,
    gloo_harness,
    tensor_list,
    tensor_out,
)

SHAPES = [(784, 10), (10,), (256, 256), (3,)]


def _grads(g: torch.Generator, n: int, scale: float) -> list[torch.Tensor]:
    return [torch.randn(*SHAPES[i], generator=g) * scale * (i + 1) for i in range(n)]


def _norm(grads: list[torch.Tensor]) -> float:
    return float(torch.sqrt(sum((t.double() ** 2).sum() for t in grads)))


# ------------------------------------------------------------------------------------------------------ global_norm

def _norm_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = [{"label": label, "kind": "norm", "grads": _grads(g, n, scale)}
           for label, n, scale in (("three tensors", 3, 1.0), ("one tensor", 1, 5.0), ("four tensors, small", 4, 1e-3),
                                   ("zero gradients", 2, 0.0))]
    out.append({"label": "float64, a (10,) and a (3,)", "kind": "norm",
                "grads": [torch.randn(10, generator=g, dtype=torch.float64), torch.randn(3, generator=g,
                                                                                 dtype=torch.float64) * 4]})
    return out


def _norm_harness(fn: Callable, case: dict) -> dict:
    given = [t.clone() for t in case["grads"]]
    norm = tensor_out(fn(given), "what global_norm returned")
    if norm.numel() != 1:
        raise Returned(f"the global norm is a tensor of shape {tuple(norm.shape)}: it is one number (a 0-dim "
                       "tensor), over every tensor of the list together")
    return {"norm": norm.detach().reshape(()), CHANGED: changed((given, case["grads"]))}


# ------------------------------------------------------------------------------------------- clip_by_global_norm

def _clip_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for label, n, scale, clip in (("norm above the cap", 3, 1.0, 1.0), ("norm below the cap: unchanged", 2, 1e-3, 1.0),
                                  ("one tensor", 1, 5.0, 0.5), ("zero gradients", 2, 0.0, 1.0),
                                  ("four tensors, a small cap", 4, 0.1, 1e-3)):
        out.append({"label": label, "kind": "clip", "clip_norm": clip, "grads": _grads(g, n, scale)})
    grads = _grads(g, 2, 0.05)
    norm = _norm(grads)
    out.append({"label": "two tensors, the cap at half their norm", "kind": "clip", "clip_norm": norm / 2,
                "grads": grads, "family": "cap", "vary": "where the norm is above the cap"})
    out.append({"label": "the same, the cap at twice their norm", "kind": "clip", "clip_norm": norm * 2,
                "grads": grads, "family": "cap", "vary": "where the norm is below the cap"})
    return out


def _clip_harness(fn: Callable, case: dict) -> dict:
    given = [t.clone() for t in case["grads"]]
    got = tensor_list(fn(given, case["clip_norm"]), "what clip_by_global_norm returned", len(given))
    return {"grads": [t.detach().clone() for t in got], CHANGED: changed((given, case["grads"]))}


# -------------------------------------------------------------------------------------------- clip_across_ranks

def _ranks_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for label, shards, clip in (("2 ranks, the norm above the cap", [[(64, 32), (32,)], [(32, 10), (10,)]], 1.0),
                                ("3 ranks of different sizes", [[(100,)], [(20, 5)], [(3,), (4, 4)]], 0.5),
                                ("2 ranks, the norm below the cap", [[(8,)], [(4,)]], 1e3)):
        out.append({"label": label, "kind": "ranks", "clip_norm": clip,
                    "shards": [[torch.randn(*s, generator=g, dtype=torch.float64) * 0.3 for s in shard]
                               for shard in shards]})
    return out


def _ranks_args(case: dict) -> list[tuple]:
    """Each rank's arguments: its shard's gradients and the cap."""
    return [([t.clone() for t in shard], case["clip_norm"]) for shard in case["shards"]]


HARNESSES: dict[str, Harness] = {
    "global_norm": Harness(cases=_norm_cases, call=_norm_harness),
    "clip_by_global_norm": Harness(cases=_clip_cases, call=_clip_harness),
    "clip_across_ranks": gloo_harness(_ranks_cases, _ranks_args,
                                      lambda ranks: {f"rank {r}": tensors for r, tensors in enumerate(ranks)}),
}
