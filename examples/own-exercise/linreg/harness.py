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
    # the edge cases, the same on every seed: the seed draws values, never which cases there are (a course draws a
    # fresh seed, and an edge case drawn from it would not be there every time)
    X = torch.tensor([[1.0, 2.0, -1.0], [0.5, -3.0, 2.0]])
    w, b = torch.tensor([0.5, -1.0, 2.0]), torch.tensor(0.25)
    out.append({"label": "a perfect fit (every residual 0)", "kind": "grad", "w": w, "b": b, "X": X,
                "y": X @ w + b})  # the gradient is exactly 0: dividing by the residuals' norm gives NaN
    return out


def _call(fn: Callable, case: dict) -> dict:
    given = [case[k].clone() for k in ("w", "b", "X", "y")]
    with Graph() as graph:  # no autograd: the inputs arrive without requires_grad
        gw, gb = tensor_pair(fn(*given), "what mse_grad returned")
    return {"gw": gw.detach(), "gb": gb.detach().reshape(()),
            CHANGED: changed(*zip(given, (case["w"], case["b"], case["X"], case["y"]), strict=True)),
            GRAPH: graph.count()}


HARNESSES = {"mse_grad": Harness(cases=_cases, call=_call)}
