"""Every rule a starter states in words is checked (#45): for each, an answer whose values are right but which breaks
the rule fails that rule's check, and its diagnosis says which rule; the way the starter asks for passes."""

import pytest
from inprocess import judged
from test_diagnosis import fn_of, said

from gradlab.practice import all_exercises

# (exercise, the rule broken, an answer with the right values that breaks it, what the diagnosis must say)
BROKEN = [
    ("jacobian.hvp", "H built row by row", """
        def hvp(f, x, v):
            x = x.detach().requires_grad_(True)
            g, = torch.autograd.grad(f(x), x, create_graph=True)
            H = torch.stack([torch.autograd.grad(g[i], x, retain_graph=True)[0] for i in range(len(x))])
            return H @ v
        """, "you differentiated the gradient more than once"),
    ("jacobian.hvp", "H built by one batched call", """
        def hvp(f, x, v):
            x = x.detach().requires_grad_(True)
            g, = torch.autograd.grad(f(x), x, create_graph=True)
            H, = torch.autograd.grad(g, x, grad_outputs=torch.eye(len(x), dtype=x.dtype), is_grads_batched=True)
            return H @ v
        """, "H is never built"),
    ("jacobian.hvp", "H from the Jacobian of the gradient", """
        def hvp(f, x, v):
            grad = lambda x: torch.autograd.grad(f(x), x, create_graph=True)[0]
            return torch.autograd.functional.jacobian(grad, x) @ v
        """, "uses torch.autograd.functional.jacobian"),
    ("jacobian.vjp", "J built row by row", """
        def vjp(f, x, v):
            x = x.detach().requires_grad_(True)
            y = f(x)
            J = torch.stack([torch.autograd.grad(y[i], x, retain_graph=True)[0] for i in range(len(y))])
            return v @ J
        """, "J is never built"),
    ("jacobian.vjp", "J by one batched call", """
        def vjp(f, x, v):
            x = x.detach().requires_grad_(True)
            y = f(x)
            J, = torch.autograd.grad(y, x, grad_outputs=torch.eye(len(y), dtype=y.dtype), is_grads_batched=True)
            return v @ J
        """, "more than one backward pass through f(x)"),
    ("gaussian-policy.score", "autograd through ln π where the closed form is asked for", """
        def score(a, mu, sigma):
            mu, sigma = mu.clone().requires_grad_(True), sigma.clone().requires_grad_(True)
            logp = -(a - mu) ** 2 / (2 * sigma ** 2) - torch.log(sigma)
            return torch.autograd.grad(logp.sum(), [mu, sigma])
        """, "built an autograd graph"),
]


@pytest.mark.parametrize(("name", "what", "source", "phrase"), BROKEN, ids=[f"{b[0]}: {b[1]}" for b in BROKEN])
def test_an_answer_with_right_values_that_breaks_a_stated_rule_fails_it(name, what, source, phrase):
    r = judged(name, fn_of(name, source))
    exercise = all_exercises()[name]
    assert r.exit_code == 1, said(r)
    assert all(c.passed for c in r.claims if c.id.split(":")[1] in exercise.claims), said(r)  # the values are right
    assert phrase in said(r), said(r)


def test_the_starter_says_each_rule_it_checks():
    """The texts name what the checks count (so that a rule checked is a rule stated, and the other way round)."""
    hvp, vjp = all_exercises()["jacobian.hvp"], all_exercises()["jacobian.vjp"]
    assert "H is never built: the check counts the backward passes through the gradient" in " ".join(hvp.doc.split())
    assert "building the whole Hessian first is not checked" not in hvp.doc
    assert "The check counts the backward passes through f(x)" in " ".join(vjp.doc.split())
