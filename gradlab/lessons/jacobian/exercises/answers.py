"""Model answers to the exercises of `gradlab jacobian`, as a student would write them: what the notebooks' "Your turn"
cells become when the suite runs them (scripts/notebooks.py --answers), what a teacher can hand out afterwards. The
suite checks each one with `gradlab check`, as it checks a student's file; never imported beside a submission."""

import torch


def jacobian_loop(f, x):
    x = x.detach().requires_grad_(True)
    y = f(x)
    rows = [torch.autograd.grad(y[i], x, retain_graph=True)[0] for i in range(len(y))]
    return torch.stack(rows)


def vjp(f, x, v):
    x = x.detach().requires_grad_(True)
    return torch.autograd.grad(f(x), x, grad_outputs=v)[0]  # vᵀJ = Σ_i v_i ∂f_i/∂x


def hvp(f, x, v):
    x = x.detach().requires_grad_(True)
    g, = torch.autograd.grad(f(x), x, create_graph=True)  # ∇f, with a graph of its own
    return torch.autograd.grad(g, x, grad_outputs=v)[0]  # H v = ∂⟨∇f, v⟩/∂x
