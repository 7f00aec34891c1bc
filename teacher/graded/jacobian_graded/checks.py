"""The reference and the known mistakes of batch_jacobian, on gradlab's side only (never in the sandbox).

The reference is the whole batch's Jacobian, (B·m) × (B·n), by torch.autograd.functional.jacobian, cut into its
diagonal blocks: it does not use the trick the exercise asks for, so it checks it. An answer of another shape, (m, B, n)
or (B, n, m), never reaches the known mistakes: the sandbox stops it, saying which shape came back and which was
expected."""

import math

import torch

from gradlab.kit.exercise import Checks, Mistake

from .harness import HARNESSES, batched_f


def _expected(case: dict) -> dict:
    full = torch.autograd.functional.jacobian(batched_f(case), case["X"])  # (B, m, B, n)
    every = torch.arange(len(case["X"]))
    return {"J": full[every, :, every, :]}


def _by_rows(f, X, fresh=True):
    X = X.detach().requires_grad_(True)
    y = f(X)
    rows = []
    for i in range(y.shape[1]):
        if fresh:
            rows.append(torch.autograd.grad(y[:, i].sum(), X, retain_graph=True)[0])
        else:
            y[:, i].sum().backward(retain_graph=True)  # adds into X.grad
            rows.append(X.grad.clone())
    return torch.stack(rows, dim=1)


def _reference(f, X):
    return _by_rows(f, X)


def _summed(f, X):
    X = X.detach().requires_grad_(True)
    y = f(X)
    g, = torch.autograd.grad(y.sum(), X)
    return g[:, None, :].expand(y.shape[0], y.shape[1], X.shape[1]).clone()


def _piled(f, X):
    return _by_rows(f, X, fresh=False)


def _extra(outs: list[dict], cases: list[dict]) -> list[float]:
    """The most backward passes per output on any input (NaN, failing, where the harness counted none)."""
    return [max(float(o.get("_passes", math.nan)) / len(c["A"]) for o, c in zip(outs, cases, strict=True))]


CHECKS = {"batch_jacobian": Checks(
    harness=HARNESSES["batch_jacobian"], reference=_reference, expected=_expected,
    mistakes=[
        Mistake(name="outputs summed", fn=_summed,
                diagnosis="every row of each Jacobian is Σ_i ∂f_bi/∂x_b: you differentiated the sum of all the "
                          "outputs at once (what tf.gradients does to a non-scalar output). Take one output i at a "
                          "time: row i = autograd.grad(f(X)[:, i].sum(), X)"),
        Mistake(name="rows piled up", fn=_piled,
                diagnosis="each row adds the ones before it: .backward() adds into X.grad. Use torch.autograd.grad "
                          "(it returns a fresh gradient) or zero X.grad between outputs"),
    ],
    extra=_extra,
    names={"J": "your Jacobians"},
    quantities=lambda case: [("m", len(case["A"]), "the number of outputs"),
                             ("B", len(case["X"]), "the number of samples")],
    errors=[("does not require grad", "X arrives without requires_grad: X = X.detach().requires_grad_(True) before "
             "y = f(X)"),
            ("Trying to backward through the graph a second time", "m backward passes through one f(X): pass "
             "retain_graph=True to every autograd.grad but the last")],
    rule_hints=["you made more than m backward passes (a Jacobian per sample, or per entry of the flattened batch): "
                "the samples are independent, so one autograd.grad(f(X)[:, i].sum(), X) gives row i of every "
                "sample's Jacobian at once: m passes for the whole batch"])}
