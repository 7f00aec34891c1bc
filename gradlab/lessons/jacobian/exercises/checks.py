"""The exercises of `gradlab jacobian`, on gradlab's side: each one's reference answer, its known mistakes (a realistic
wrong implementation and what to tell its author) and what the diagnosis measures. Never imported beside a
submission."""

from __future__ import annotations

import math

import torch

from gradlab.kit.exercise import Checks, Mistake
from gradlab.lessons.jacobian.exercises.harness import HARNESSES

# ----------------------------------------------------------------------------------------------------------- vjp

def _vjp_reference(f, x, v):
    """torch.autograd.functional.vjp, the library's vector-Jacobian product (torch.func.vjp computes the same, but
    its first call costs about a second of imports in gradlab's process)."""
    return torch.autograd.functional.vjp(f, x, v)[1]


def _vjp_ones(f, x, v):
    x = x.detach().requires_grad_(True)
    y = f(x)
    return torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y))[0]


def _vjp_full(f, x, v):
    return torch.autograd.functional.jacobian(f, x)  # the whole m × n matrix, v never used


def _vjp_sum_weighted(f, x, v):
    x = x.detach().requires_grad_(True)
    return v.sum() * torch.autograd.grad(f(x).sum(), x)[0]


def _most(key: str):
    """The largest count KEY the harness measured on any input (NaN, failing, where it measured none)."""
    return lambda outs, cases: [max(float(o.get(key, math.nan)) for o in outs)]


VJP = Checks(
    harness=HARNESSES["vjp"], reference=_vjp_reference, extra=_most("_passes"),
    rule_hints=["you made more than one backward pass through f(x) (J row by row, or a batched call): vᵀJ is one "
                "pass, torch.autograd.grad(f(x), x, grad_outputs=v), and J is never built"],
    mistakes=[
        Mistake(name="ones", fn=_vjp_ones,
                diagnosis="you weighed the outputs with ones (tf.gradients's default grad_ys): that is Σ_i ∂f_i/∂x, "
                          "the rows of J summed. Pass grad_outputs=v"),
        Mistake(name="the whole Jacobian", fn=_vjp_full,
                diagnosis="you returned the whole m × n Jacobian: the vector-Jacobian product is one vector of n "
                          "entries, vᵀJ = Σ_i v_i ∂f_i/∂x, which autograd computes without building J: "
                          "torch.autograd.grad(f(x), x, grad_outputs=v)"),
        Mistake(name="Σv × the gradient of Σf", fn=_vjp_sum_weighted,
                diagnosis="you scaled the gradient of Σ_i f_i by Σ_i v_i: each output's gradient must be weighed by "
                          "its own v_i, Σ_i v_i ∂f_i/∂x (grad_outputs=v)"),
    ],
    names={"vJ": "your vᵀJ"},
    quantities=lambda case: [("m", len(case["v"]), "the number of outputs")],
    hints={("*", "scale", "1/m"): "a mean over the outputs where vᵀJ sums them: (v · f(x)).sum(), not .mean()"},
    errors=[("does not require grad", "x arrives without requires_grad: x = x.detach().requires_grad_(True), then "
             "y = f(x), then torch.autograd.grad(y, x, grad_outputs=v)")])


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
        Mistake(name="rows summed", fn=_jac_summed,
                diagnosis="every row is Σ_i ∂f_i/∂x: that is what tf.gradients (and grad_outputs = ones) returns for a "
                          "non-scalar output. Take one output at a time: row i = autograd.grad(f(x)[i], x)"),
        Mistake(name="transposed", fn=_jac_transposed,
                diagnosis="your Jacobian is transposed: J[i, j] = ∂f_i/∂x_j has one row per output (m × n)"),
        Mistake(name="rows piled up", fn=_jac_piled,
                diagnosis="each row adds the ones before it: .backward() adds into x.grad. Use torch.autograd.grad (it "
                          "returns a fresh gradient) or zero x.grad between rows"),
    ],
    names={"J": "your Jacobian"},
    errors=[("out of bounds", "J has one row per output: loop over range(len(f(x))), the m outputs, not "
             "range(len(x)), the n inputs (they differ here: 3 outputs of 4 inputs)"),
            ("does not require grad", "x arrives without requires_grad: x = x.detach().requires_grad_(True) before "
             "y = f(x)")])


# ----------------------------------------------------------------------------------------------------------- hvp

def _hvp_reference(f, x, v):
    """torch.autograd.functional.hvp, the library's Hessian-vector product (double backward inside)."""
    return torch.autograd.functional.hvp(f, x, v)[1]


def _hvp_ones(f, x, v):
    x = x.detach().requires_grad_(True)
    g, = torch.autograd.grad(f(x), x, create_graph=True)
    return torch.autograd.grad(g.sum(), x)[0]


def _hvp_elementwise(f, x, v):
    x = x.detach().requires_grad_(True)
    return v * torch.autograd.grad(f(x), x)[0]


def _hvp_gradient(f, x, v):
    x = x.detach().requires_grad_(True)
    return torch.autograd.grad(f(x), x)[0]


def _hvp_quantities(case: dict) -> list:
    x = case["x"].clone().requires_grad_(True)
    A = case["A"]
    grad, = torch.autograd.grad(torch.nn.functional.softplus(A @ x).sum() + 0.1 * (x @ x) ** 2, x)
    return [("∇f", grad.detach(), "the gradient of f at x"), ("v", case["v"], "the direction")]


HVP = Checks(
    harness=HARNESSES["hvp"], reference=_hvp_reference, extra=_most("_second"),
    rule_hints=["you differentiated the gradient more than once (H built row by row, or by a batched call): H v is "
                "one pass through it, torch.autograd.grad(g, x, grad_outputs=v) with g = torch.autograd.grad(f(x), "
                "x, create_graph=True)[0], and H is never built"],
    mistakes=[
        Mistake(name="H · ones", fn=_hvp_ones,
                diagnosis="you differentiated Σ_j ∂f/∂x_j, so you got H·(1, …, 1) whatever v is: differentiate ⟨∇f, v⟩ "
                          "instead, autograd.grad(g, x, grad_outputs=v)"),
        Mistake(name="v ⊙ ∇f", fn=_hvp_elementwise,
                diagnosis="you multiplied the gradient by v entry by entry: H v needs the gradient differentiated "
                          "again, autograd.grad(g, x, grad_outputs=v) with g from autograd.grad(f(x), x, "
                          "create_graph=True)"),
        Mistake(name="the gradient", fn=_hvp_gradient,
                diagnosis="you returned ∇f itself: H v is the derivative of ⟨∇f, v⟩, a second autograd.grad through "
                          "the first one (create_graph=True keeps its graph)"),
    ],
    names={"Hv": "your H v"},
    hints={("*", "scale", "1/n"): "a mean where the sum belongs: differentiate Σ_j g_j v_j = (g * v).sum(), or pass "
                                  "grad_outputs=v"},
    quantities=lambda case: [*_hvp_quantities(case), ("n", len(case["x"]), "the number of inputs")],
    errors=[("does not require grad", "the second autograd.grad needs a graph through the first: pass "
             "create_graph=True to the first autograd.grad(f(x), x, create_graph=True), and make x a leaf that "
             "requires grad (x.detach().requires_grad_(True))")])


CHECKS: dict[str, Checks] = {
    "vjp": VJP,
    "jacobian_loop": JACOBIAN,
    "hvp": HVP,
}
