"""How gaussian_policy_graded.score is called, and on which inputs: the only file of the exercise that runs beside the
student's code, so it imports torch and gradlab.kit.harness only (the reference is in checks.py).

Placed, not drawn, on every seed: actions within 1e-6 of ±1 (where ln(1 − a²) is large), a = tanh(μ) (u = μ: the
score is (0, −1)), σ = 1 beside σ ≠ 1 (where ∂/∂σ and ∂/∂log σ differ)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.kit.harness import CHANGED, GRAPH, Graph, Harness, Returned, changed, tensor_out

NEAR = 1 - 1e-6  # the largest |a| the check uses: 1 − a² ≈ 2e-6 there, far above float64's rounding of a²


def _draw(g: torch.Generator, n: int, log_std: float) -> dict:
    mu = torch.randn(n, generator=g, dtype=torch.float64)
    log_std_t = torch.full((n,), log_std, dtype=torch.float64) + 0.3 * torch.randn(n, generator=g,
                                                                                  dtype=torch.float64)
    u = (mu + log_std_t.exp() * torch.randn(n, generator=g, dtype=torch.float64)).clamp(-7.0, 7.0)
    return {"mu": mu, "log_std": log_std_t, "a": torch.tanh(u)}  # |u| ≤ 7: |a| ≤ tanh(7) < NEAR


def _cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = [{"label": label, "kind": "score", **_draw(g, n, log_std)}
           for label, n, log_std in (("two dimensions", 2, -0.5), ("a batch of 64", 64, -0.5),
                                     ("small σ (log σ ≈ −3)", 8, -3.0), ("large σ (log σ ≈ 1.5)", 8, 1.5))]
    d = _draw(g, 6, 0.0)
    out.append({"label": "actions within 1e-6 of ±1", "kind": "score", **d,
                "a": torch.tensor([NEAR, -NEAR, NEAR, -NEAR, 0.999, -0.999], dtype=torch.float64)})
    d = _draw(g, 5, -0.5)
    out.append({"label": "a = tanh(μ): the score is (0, −1)", "kind": "score", **d, "a": torch.tanh(d["mu"])})
    d = _draw(g, 6, 0.0)
    out.append({"label": "6 actions, σ = 1", "kind": "score", **d, "log_std": torch.zeros(6, dtype=torch.float64),
                "family": "σ", "vary": "where σ = 1"})
    out.append({"label": "the same actions, σ ≠ 1", "kind": "score", **d, "family": "σ", "vary": "for other σ"})
    return out


def _call(fn: Callable, case: dict) -> dict:
    given = [case[k].clone() for k in ("a", "mu", "log_std")]
    with Graph() as graph:  # no autograd: the inputs arrive without requires_grad
        got = fn(*given)
    if not isinstance(got, list | tuple) or len(got) != 3:
        raise Returned("what score returned is not three tensors; return (log_pi, d_mu, d_log_std)")
    log_pi, d_mu, d_log_std = (tensor_out(t, f"output {i + 1} of score") for i, t in enumerate(got))
    return {"log_pi": log_pi.detach().double(), "d_mu": d_mu.detach().double(),
            "d_log_std": d_log_std.detach().double(),
            CHANGED: changed(*zip(given, (case["a"], case["mu"], case["log_std"]), strict=True)),
            GRAPH: graph.count()}


HARNESSES = {"score": Harness(cases=_cases, call=_call)}
