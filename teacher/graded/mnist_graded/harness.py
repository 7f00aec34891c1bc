"""How weighted_softmax_grad is called, and on which inputs: the only file of the exercise that runs beside the
student's code (torch, the standard library and gradlab.kit.harness only; the reference is in checks.py).

Every edge case is there on every seed (a course draws a fresh one): only the numbers in it are drawn."""

from collections.abc import Callable

import torch
import torch.nn.functional as F

from gradlab.kit.harness import CHANGED, GRAPH, Graph, Harness, changed, tensor_pair

KEYS = ("W", "b", "x", "y", "w")


def _case(g: torch.Generator, label: str, n: int, *, scale: float, zeros: int, weight: float | None = None,
          dtype=torch.float32, **extra) -> dict:
    """N samples, weights drawn in [0.5, 2] (or all WEIGHT), the first ZEROS of them 0 (padding, at drawn places)."""
    W = torch.randn(784, 10, generator=g, dtype=dtype) * scale
    b = torch.randn(10, generator=g, dtype=dtype) * scale
    x = torch.rand(n, 784, generator=g, dtype=dtype)
    y = F.one_hot(torch.randint(0, 10, (n,), generator=g), 10).to(dtype)
    w = (torch.rand(n, generator=g, dtype=dtype) * 1.5 + 0.5) if weight is None else torch.full((n,), weight,
                                                                                               dtype=dtype)
    w[torch.randperm(n, generator=g)[:zeros]] = 0.0
    return {"label": label, "kind": "grad", "W": W, "b": b, "x": x, "y": y, "w": w, **extra}


def _cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    ones = _case(g, "every weight 1 (mnist.softmax_grad's cost)", 40, scale=0.01, zeros=0, weight=1.0,
                 family="weights", vary="when every weight is 1")
    drawn = {**ones, "label": "the same batch, weights drawn, 10 of them 0", "vary": "for other weights"}
    drawn["w"] = torch.rand(40, generator=g) * 1.5 + 0.5
    drawn["w"][torch.randperm(40, generator=g)[:10]] = 0.0
    return [
        ones, drawn,
        _case(g, "a batch of 64, weights drawn, none 0", 64, scale=0.01, zeros=0),
        _case(g, "one sample of weight 3", 1, scale=0.01, zeros=0, weight=3.0),
        _case(g, "every weight 0 (a batch of padding)", 16, scale=0.01, zeros=16),
        _case(g, "large logits (float32, |z| in the hundreds), 8 weights of 30 are 0", 30, scale=10.0, zeros=8),
        _case(g, "a saturated softmax in float64, 5 weights of 20 are 0", 20, scale=3.0, zeros=5,
              dtype=torch.float64),
    ]


def _call(fn: Callable, case: dict) -> dict:
    given = [case[k].clone() for k in KEYS]
    with Graph() as graph:  # no autograd: the inputs arrive without requires_grad
        gW, gb = tensor_pair(fn(*given), "what weighted_softmax_grad returned")
    return {"gW": gW.detach(), "gb": gb.detach(), CHANGED: changed(*zip(given, (case[k] for k in KEYS), strict=True)),
            GRAPH: graph.count()}


HARNESSES = {"weighted_softmax_grad": Harness(cases=_cases, call=_call)}
