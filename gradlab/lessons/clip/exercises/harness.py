"""The exercises of `gradlab clip`, beside the submission: each exercise's inputs (CASES(seed)) and how a function is
called on them (the harness). The only code of the lesson that runs in the sandbox: torch and
gradlab.practice.harness, nothing else (no reference, no known mistake: those are in checks.py)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.practice.harness import Harness

# ------------------------------------------------------------------------------------------- clip_by_global_norm

def _clip_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    shapes = [(784, 10), (10,), (256, 256), (3,)]
    out = []
    for label, n, scale, clip in (("norm above the cap", 3, 1.0, 1.0), ("norm below the cap: unchanged", 2, 1e-3, 1.0),
                                  ("one tensor", 1, 5.0, 0.5), ("zero gradients", 2, 0.0, 1.0),
                                  ("four tensors, a small cap", 4, 0.1, 1e-3)):
        out.append({"label": label, "kind": "clip", "clip_norm": clip,
                    "grads": [torch.randn(*shapes[i], generator=g) * scale * (i + 1) for i in range(n)]})
    return out


def _clip_harness(fn: Callable, case: dict) -> dict:
    return {"grads": [t.detach() for t in fn([g.clone() for g in case["grads"]], case["clip_norm"])]}


HARNESSES: dict[str, Harness] = {
    "clip_by_global_norm": Harness(cases=_clip_cases, call=_clip_harness),
}
