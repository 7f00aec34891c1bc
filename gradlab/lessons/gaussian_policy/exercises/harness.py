"""The exercises of `gradlab gaussian-policy`, beside the submission: each exercise's inputs (CASES(seed)) and how a
function is called on them (the harness). The only code of the lesson that runs in the sandbox: torch and
gradlab.kit.harness, nothing else (no reference, no known mistake: those are in checks.py)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.kit.harness import CHANGED, GRAPH, Graph, Harness, changed, function_outputs, tensor_pair

# --------------------------------------------------------------------------------------------------------- score

def _draw(g: torch.Generator, n: int, spread: float) -> dict:
    mu = torch.randn(n, generator=g, dtype=torch.float64)
    sigma = (torch.rand(n, generator=g, dtype=torch.float64) + 0.5) * spread
    return {"mu": mu, "sigma": sigma, "a": mu + sigma * torch.randn(n, generator=g, dtype=torch.float64)}


def _score_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = [{"label": label, "kind": "score", **_draw(g, n, spread)}
           for label, n, spread in (("two dimensions", 2, 1.0), ("a batch of 64", 64, 1.0), ("small σ", 8, 0.01),
                                    ("large σ", 8, 10.0))]
    mu = torch.zeros(3, dtype=torch.float64)
    out.append({"label": "a = μ", "kind": "score", "mu": mu, "sigma": torch.ones(3, dtype=torch.float64),
                "a": mu.clone()})
    d = _draw(g, 6, 1.0)
    out.append({"label": "6 actions, σ = 1", "kind": "score", "mu": d["mu"], "a": d["a"],
                "sigma": torch.ones(6, dtype=torch.float64), "family": "σ", "vary": "where σ = 1"})
    out.append({"label": "the same actions, σ ≠ 1", "kind": "score", **d, "family": "σ", "vary": "for other σ"})
    return out


def _score_harness(fn: Callable, case: dict) -> dict:
    given = [case[k].clone() for k in ("a", "mu", "sigma")]
    with Graph() as graph:  # "in closed form": the inputs arrive without requires_grad
        d_mu, d_sigma = tensor_pair(fn(*given), "what score returned")
    return {"d_mu": d_mu.detach(), "d_sigma": d_sigma.detach(),
            CHANGED: changed(*zip(given, (case["a"], case["mu"], case["sigma"]), strict=True)), GRAPH: graph.count()}


# ------------------------------------------------------------------------------------------------ GaussianLogProb

NAMES = ("a", "mu", "sigma")


def _layer_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)

    def rand(n):
        return torch.randn(n, generator=g, dtype=torch.float64)

    out = []
    d = _draw(g, 16, 1.0)
    out.append({"label": "16 actions, dy = 1", "kind": "layer", **d, "dy": torch.ones(16, dtype=torch.float64),
                "v": [rand(16), rand(16), rand(16)], "family": "upstream", "vary": "when dy = 1"})
    out.append({"label": "the same, random dy", "kind": "layer", **d, "dy": rand(16) + 0.3,
                "v": [rand(16), rand(16), rand(16)], "family": "upstream", "vary": "for another upstream gradient dy"})
    for label, n, spread in (("small σ", 8, 0.05), ("large σ", 8, 20.0)):
        out.append({"label": label, "kind": "layer", **_draw(g, n, spread), "dy": rand(n),
                    "v": [rand(n), rand(n), rand(n)]})
    return out


def _layer_harness(cls, case: dict) -> dict:
    return function_outputs(cls, [case[k] for k in NAMES], case["dy"], case["v"], "GaussianLogProb", NAMES)


HARNESSES: dict[str, Harness] = {
    "score": Harness(cases=_score_cases, call=_score_harness),
    "GaussianLogProb": Harness(cases=_layer_cases, call=_layer_harness),
}
