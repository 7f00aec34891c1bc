"""The exercises of `gradlab jacobian`, beside the submission: each exercise's inputs (CASES(seed)) and how a function
is called on them (the harness). The only code of the lesson that runs in the sandbox: torch and
gradlab.kit.harness, nothing else (no reference, no known mistake: those are in checks.py)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.kit.harness import Harness, tensor_out


def _count(t: torch.Tensor, passes: list, weight: int) -> None:
    """One item in PASSES per backward pass that reaches T: WEIGHT items for a batched pass (autograd.grad with
    is_grads_batched, which carries many vectors at once), so that a matrix built in one batched call counts as the
    passes it replaces."""
    if t.requires_grad:
        t.register_hook(lambda grad: passes.extend([1] * (weight if torch._C._functorch.is_legacy_batchedtensor(grad)
                                                          else 1)))

# ------------------------------------------------------------------------------------------ vjp and jacobian_loop

def _tanh_f(case: dict, passes: list | None = None) -> Callable:
    """f(v) = tanh(A v): m outputs of n inputs. PASSES, when given, gets an item per backward pass through the output
    (m for a batched one)."""
    A = case["A"]

    def f(v):
        y = torch.tanh(A @ v)
        if passes is not None:
            _count(y, passes, len(A))
        return y

    return f


def _vjp_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for label, m, n in (("3 outputs, 4 inputs", 3, 4), ("6 outputs, 2 inputs", 6, 2), ("square 5 × 5", 5, 5)):
        out.append({"label": label, "kind": "vjp", "A": torch.randn(m, n, generator=g, dtype=torch.float64),
                    "x": torch.randn(n, generator=g, dtype=torch.float64),
                    "v": torch.randn(m, generator=g, dtype=torch.float64)})
    A, x = torch.randn(4, 3, generator=g, dtype=torch.float64), torch.randn(3, generator=g, dtype=torch.float64)
    out.append({"label": "4 outputs, v = ones", "kind": "vjp", "A": A, "x": x, "v": torch.ones(4, dtype=torch.float64),
                "family": "v", "vary": "when v = (1, …, 1)"})
    out.append({"label": "the same, another v", "kind": "vjp", "A": A, "x": x,
                "v": torch.randn(4, generator=g, dtype=torch.float64), "family": "v", "vary": "for another v"})
    return out


def _vjp_harness(fn: Callable, case: dict) -> dict:
    passes: list = []
    got = tensor_out(fn(_tanh_f(case, passes), case["x"].clone(), case["v"].clone()), "what vjp returned")
    return {"vJ": got.detach(), "_passes": torch.tensor(float(len(passes)))}


def _jac_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = [{"label": label, "kind": "jacobian", "A": torch.randn(m, n, generator=g, dtype=torch.float64),
            "x": torch.randn(n, generator=g, dtype=torch.float64)}
           for label, m, n in (("3 outputs, 4 inputs", 3, 4), ("6 outputs, 2 inputs", 6, 2), ("square 8 × 8", 8, 8))]
    A, x = torch.randn(4, 5, generator=g, dtype=torch.float64), torch.randn(5, generator=g, dtype=torch.float64)
    out.append({"label": "one output (a 1 × 5 Jacobian)", "kind": "jacobian", "A": A[:1], "x": x, "family": "m",
                "vary": "for one output"})
    out.append({"label": "the same f with 4 outputs", "kind": "jacobian", "A": A, "x": x, "family": "m",
                "vary": "for several outputs"})
    return out


def _jac_harness(fn: Callable, case: dict) -> dict:
    return {"J": tensor_out(fn(_tanh_f(case), case["x"].clone()), "what jacobian_loop returned").detach()}


# ----------------------------------------------------------------------------------------------------------- hvp

def _scalar_f(case: dict, first: list | None = None, through: list | None = None) -> Callable:
    """f(x) = Σ softplus(A x) + 0.1 ‖x‖⁴: a scalar whose Hessian is not constant. FIRST, when given, gets an item per
    backward pass through f's output (a gradient); THROUGH one per pass that reaches z = A x, which the first
    derivative's graph holds (softplus' backward reads z): each gradient's pass reaches it, and so does each pass
    through the gradient (n for a batched one). THROUGH − FIRST counts the passes through ∇f: one for H v, n to
    build H row by row."""
    A = case["A"]

    def f(x):
        z = A @ x
        y = torch.nn.functional.softplus(z).sum() + 0.1 * (x @ x) ** 2
        if first is not None:
            _count(z, through, len(x))
            _count(y, first, 1)
        return y

    return f


def _hvp_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for label, n in (("4 inputs", 4), ("one input", 1), ("8 inputs", 8)):
        out.append({"label": label, "kind": "hvp", "A": torch.randn(6, n, generator=g, dtype=torch.float64),
                    "x": torch.randn(n, generator=g, dtype=torch.float64),
                    "v": torch.randn(n, generator=g, dtype=torch.float64)})
    A, x = torch.randn(6, 5, generator=g, dtype=torch.float64), torch.randn(5, generator=g, dtype=torch.float64)
    out.append({"label": "5 inputs, v = ones", "kind": "hvp", "A": A, "x": x, "v": torch.ones(5, dtype=torch.float64),
                "family": "v", "vary": "when v = (1, …, 1)"})
    out.append({"label": "the same, another v", "kind": "hvp", "A": A, "x": x,
                "v": torch.randn(5, generator=g, dtype=torch.float64), "family": "v", "vary": "for another v"})
    return out


def _hvp_harness(fn: Callable, case: dict) -> dict:
    first: list = []
    through: list = []
    Hv = tensor_out(fn(_scalar_f(case, first, through), case["x"].clone(), case["v"].clone()), "what hvp returned")
    return {"Hv": Hv.detach(), "_second": torch.tensor(float(len(through) - len(first)))}


HARNESSES: dict[str, Harness] = {
    "vjp": Harness(cases=_vjp_cases, call=_vjp_harness),
    "jacobian_loop": Harness(cases=_jac_cases, call=_jac_harness),
    "hvp": Harness(cases=_hvp_cases, call=_hvp_harness),
}
