"""The exercises of `gradlab jacobian`, on gradlab's side: each one's reference answer, its known mistakes (a realistic
wrong implementation and what to tell its author) and what its checks claim. Never imported beside a submission."""

from __future__ import annotations

import torch

from gradlab.lessons.jacobian.exercises.harness import HARNESSES
from gradlab.practice.exercise import Checks, Mistake

# ------------------------------------------------------------------------------------------------- jacobian_loop

def _jac_reference(f, x):
    return torch.autograd.functional.jacobian(f, x)


def _jac_summed(f, x):
    x = x.detach().clone().requires_grad_(True)
    y = f(x)
    g, = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y))
    return g.expand(len(y), len(x)).clone()


def _jac_transposed(f, x):
    return torch.autograd.functional.jacobian(f, x).T.contiguous()


def _jac_piled(f, x):
    x = x.detach().clone().requires_grad_(True)
    y = f(x)
    rows = []
    for i in range(len(y)):
        y[i].backward(retain_graph=True)  # adds into x.grad: row i = Σ_{k ≤ i} ∂f_k/∂x
        rows.append(x.grad.clone())
    return torch.stack(rows)


JACOBIAN = Checks(
    harness=HARNESSES["jacobian_loop"], reference=_jac_reference,
    mistakes=[
        Mistake("rows summed", _jac_summed, lambda s, r: "every row is Σ_i ∂f_i/∂x: that is what tf.gradients (and "
                "grad_outputs = ones) returns for a non-scalar output. Take one output at a time: row i = "
                "autograd.grad(f(x)[i], x)"),
        Mistake("transposed", _jac_transposed, lambda s, r: "your Jacobian is transposed: J[i, j] = ∂f_i/∂x_j has one "
                "row per output (m × n)"),
        Mistake("rows piled up", _jac_piled, lambda s, r: "each row adds the ones before it: .backward() adds into "
                "x.grad. Use torch.autograd.grad (it returns a fresh gradient) or zero x.grad between rows"),
    ],
    claims={"jacobian": ("your Jacobian ≡ torch.autograd.functional.jacobian's (max relative |Δ|)", 1e-9)})


CHECKS: dict[str, Checks] = {
    "jacobian_loop": JACOBIAN,
}
