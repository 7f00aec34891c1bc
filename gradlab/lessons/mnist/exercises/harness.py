"""The exercises of `gradlab mnist`, beside the submission: each exercise's inputs (CASES(seed)) and how a function is
called on them (the harness). The only code of the lesson that runs in the sandbox: torch and
gradlab.kit.harness, nothing else (no reference, no known mistake: those are in checks.py).

Some inputs come in families that vary one thing (one sample or a batch, float32 or float64): the diagnosis says for
which members an answer is right."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from gradlab.kit.harness import CHANGED, GRAPH, Graph, Harness, changed, function_outputs, tensor_pair

# ------------------------------------------------------------------------------------------------------ sgd_step

def _batch(g: torch.Generator, n: int, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.rand(n, 784, generator=g, dtype=dtype)
    return x, F.one_hot(torch.randint(0, 10, (n,), generator=g), 10).to(dtype)


def _sgd_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    W, b = torch.randn(784, 10, generator=g) * 0.01, torch.randn(10, generator=g) * 0.01
    x, y = _batch(g, 100)
    out.append({"label": "batch of 100", "kind": "step", "W": W, "b": b, "x": x, "y": y, "lr": 0.5,
                "family": "size", "vary": "for a batch"})
    out.append({"label": "one sample (the batch's first)", "kind": "step", "W": W, "b": b, "x": x[:1], "y": y[:1],
                "lr": 0.5, "family": "size", "vary": "for one sample"})
    for label, batch, scale, lr in (("zero init (the tutorial's)", 50, 0.0, 0.01), ("lr = 0", 20, 0.01, 0.0),
                                    ("large weights", 30, 1.0, 0.1),
                                    ("large logits (float32, |z| in the hundreds)", 40, 10.0, 0.2)):
        x, y = _batch(g, batch)
        out.append({"label": label, "kind": "step", "W": torch.randn(784, 10, generator=g) * scale,
                    "b": torch.randn(10, generator=g) * scale, "x": x, "y": y, "lr": lr})
    # float64: free-running float32 runs that add in a different order drift apart over the steps (gradlab ddp)
    xs = torch.rand(20, 50, 784, generator=g, dtype=torch.float64)
    ys = F.one_hot(torch.randint(0, 10, (20, 50), generator=g), 10).double()
    out.append({"label": "20 steps of training from zero (float64)", "kind": "train", "compound": True,
                "W": torch.zeros(784, 10, dtype=torch.float64), "b": torch.zeros(10, dtype=torch.float64),
                "xs": xs, "ys": ys, "lr": 0.5})
    return out


def _sgd_harness(fn: Callable, case: dict) -> dict:
    W, b = case["W"].clone(), case["b"].clone()
    batches = [(case["x"], case["y"])] if case["kind"] == "step" else list(zip(case["xs"], case["ys"], strict=True))
    touched = torch.zeros(2)
    for x, y in batches:
        W_in, b_in = W.clone().requires_grad_(True), b.clone().requires_grad_(True)
        got = tensor_pair(fn(W_in, b_in, x, y, case["lr"]), "what sgd_step returned")
        touched = torch.maximum(touched, changed((W_in, W), (b_in, b)))
        W, b = (t.detach() for t in got)
    return {"W": W, "b": b, CHANGED: touched}


# -------------------------------------------------------------------------------------------------- softmax_grad

def _grad_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    W, b = torch.randn(784, 10, generator=g) * 0.01, torch.randn(10, generator=g) * 0.01
    x, y = _batch(g, 100)
    out.append({"label": "batch of 100", "kind": "grad", "W": W, "b": b, "x": x, "y": y,
                "family": "size", "vary": "for a batch"})
    out.append({"label": "one sample (the batch's first)", "kind": "grad", "W": W, "b": b, "x": x[:1], "y": y[:1],
                "family": "size", "vary": "for one sample"})
    for label, batch, scale, dtype in (("zero weights", 50, 0.0, torch.float32),
                                       ("large weights: a saturated softmax (float64)", 30, 3.0, torch.float64),
                                       ("large logits (float32, |z| in the hundreds)", 40, 10.0, torch.float32)):
        out.append({"label": label, "kind": "grad", "W": torch.randn(784, 10, generator=g, dtype=dtype) * scale,
                    "b": torch.randn(10, generator=g, dtype=dtype) * scale, "x": torch.rand(batch, 784, generator=g,
                                                                                          dtype=dtype),
                    "y": F.one_hot(torch.randint(0, 10, (batch,), generator=g), 10).to(dtype)})
    W, b = torch.randn(784, 10, generator=g, dtype=torch.float64) * 0.1, torch.randn(10, generator=g,
                                                                                   dtype=torch.float64) * 0.1
    x, y = _batch(g, 64, torch.float64)
    out.append({"label": "float64", "kind": "grad", "W": W, "b": b, "x": x, "y": y, "family": "precision",
                "vary": "in float64"})
    out.append({"label": "the same in float32", "kind": "grad", "W": W.float(), "b": b.float(), "x": x.float(),
                "y": y.float(), "family": "precision", "vary": "in float32"})
    return out


def _grad_harness(fn: Callable, case: dict) -> dict:
    given = [case[k].clone() for k in ("W", "b", "x", "y")]
    with Graph() as graph:  # "no autograd": the inputs arrive without requires_grad
        got = tensor_pair(fn(*given), "what softmax_grad returned")
    kept = (case["W"], case["b"], case["x"], case["y"])
    return {"gW": got[0].detach(), "gb": got[1].detach(), CHANGED: changed(*zip(given, kept, strict=True)),
            GRAPH: graph.count()}


# ---------------------------------------------------------------------------------------------------- LogSoftmax

def _lsm_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(16, 10, generator=g, dtype=torch.float64) * 3
    out = [
        {"label": "16 × 10 logits, dy = 1", "kind": "float64", "z": z, "dy": torch.ones_like(z),
         "v": torch.ones_like(z), "family": "upstream", "vary": "when dy = 1"},
        {"label": "16 × 10 logits, random dy", "kind": "float64", "z": z,
         "dy": torch.randn(16, 10, generator=g, dtype=torch.float64),
         "v": torch.randn(16, 10, generator=g, dtype=torch.float64), "family": "upstream",
         "vary": "for another upstream gradient dy"},
        {"label": "one row", "kind": "float64", "z": z[:1], "dy": torch.randn(1, 10, generator=g, dtype=torch.float64),
         "v": torch.randn(1, 10, generator=g, dtype=torch.float64)},
    ]
    big = torch.randn(8, 10, generator=g) * 3 + torch.tensor([100.0] + [0.0] * 9)
    out.append({"label": "logits near 100 (float32)", "kind": "float32", "z": big,
                "dy": torch.randn(8, 10, generator=g), "v": torch.randn(8, 10, generator=g)})
    out.append({"label": "logits near −1000 (float32)", "kind": "float32", "z": big - 1100,
                "dy": torch.randn(8, 10, generator=g), "v": torch.randn(8, 10, generator=g)})
    return out


def _lsm_harness(cls, case: dict) -> dict:
    return function_outputs(cls, [case["z"]], case["dy"], [case["v"]], "LogSoftmax")


HARNESSES: dict[str, Harness] = {
    "sgd_step": Harness(cases=_sgd_cases, call=_sgd_harness),
    "softmax_grad": Harness(cases=_grad_cases, call=_grad_harness),
    "LogSoftmax": Harness(cases=_lsm_cases, call=_lsm_harness),
}
