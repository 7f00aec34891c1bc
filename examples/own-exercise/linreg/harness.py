"""How mse_grad is called, and on which inputs: the only file of the exercise that runs beside the student's code, so
it imports torch and gradlab.kit.harness only (no reference here: that is checks.py)."""

from collections.abc import Callable

import torch

from gradlab.kit.harness import CHANGED, GRAPH, Graph, Harness, changed, tensor_pair


def _cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for label, n, d, dtype in (("a batch of 64", 64, 5, torch.float32), ("one sample", 1, 5, torch.float32),
                               ("a batch of 200, float64", 200, 3, torch.float64), ("a wide X (N < D)", 4, 12,
                                                                                    torch.float64)):
        X = torch.randn(n, d, generator=g, dtype=dtype)
        out.append({"label": label, "kind": "grad", "w": torch.randn(d, generator=g, dtype=dtype),
                    "b": torch.randn((), generator=g, dtype=dtype), "X": X,
                    "y": torch.randn(n, generator=g, dtype=dtype)})
    return out


def _call(fn: Callable, case: dict) -> dict:
    given = [case[k].clone() for k in ("w", "b", "X", "y")]
    with Graph() as graph:  # no autograd: the inputs arrive without requires_grad
        gw, gb = tensor_pair(fn(*given), "what mse_grad returned")
    return {"gw": gw.detach(), "gb": gb.detach().reshape(()),
            CHANGED: changed(*zip(given, (case["w"], case["b"], case["X"], case["y"]), strict=True)),
            GRAPH: graph.count()}


HARNESSES = {"mse_grad": Harness(cases=_cases, call=_call)}
