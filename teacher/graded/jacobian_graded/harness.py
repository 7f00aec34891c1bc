"""How batch_jacobian is called, and on which inputs: the only file of the exercise that runs beside the student's
code (torch, the standard library and gradlab.kit.harness only; the reference is in checks.py).

f counts the backward passes through its output (a hook on it fires once per pass: an autograd.grad call, a
.backward, or one batched call with is_grads_batched)."""

from collections.abc import Callable

import torch

from gradlab.kit.harness import Harness, tensor_out


def batched_f(case: dict, passes: list | None = None) -> Callable:
    """f(X) = tanh(X Aᵀ + c) · sigmoid(X u): (B, n) -> (B, m), row b from X's row b alone. PASSES, when given,
    gets one item per backward pass through the output."""
    A, c, u = case["A"], case["c"], case["u"]

    def f(X):
        y = torch.tanh(X @ A.T + c) * torch.sigmoid(X @ u)[:, None]
        if passes is not None and y.requires_grad:
            y.register_hook(lambda grad: passes.append(1))
        return y

    return f


def _case(g: torch.Generator, label: str, B: int, m: int, n: int, **extra) -> dict:
    d = torch.float64
    return {"label": label, "kind": "jacobian", "A": torch.randn(m, n, generator=g, dtype=d),
            "c": torch.randn(m, generator=g, dtype=d), "u": torch.randn(n, generator=g, dtype=d),
            "X": torch.randn(B, n, generator=g, dtype=d), **extra}


def _cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    several = _case(g, "6 samples, 4 outputs of 3 inputs", 6, 4, 3, family="m", vary="for several outputs")
    one = {**several, "label": "the same samples, one output (its first)", "A": several["A"][:1],
           "c": several["c"][:1], "vary": "for one output"}
    return [
        _case(g, "8 samples, 3 outputs of 5 inputs", 8, 3, 5),
        _case(g, "5 samples, 6 outputs of 2 inputs", 5, 6, 2),
        _case(g, "one sample, 4 outputs of 4 inputs", 1, 4, 4),
        _case(g, "7 samples, a square 5 × 5", 7, 5, 5),
        several, one,
    ]


def _call(fn: Callable, case: dict) -> dict:
    passes: list = []
    J = tensor_out(fn(batched_f(case, passes), case["X"].clone()), "what batch_jacobian returned")
    return {"J": J.detach(), "_passes": torch.tensor(float(len(passes)))}


HARNESSES = {"batch_jacobian": Harness(cases=_cases, call=_call)}
