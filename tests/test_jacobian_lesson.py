"""The jacobian lesson: closed form, every method on random shapes, Hessians, the CLI and its bad inputs."""

import json

import pytest
import torch
from conftest import assert_one_line_error, invoke
from hypothesis import given, settings
from hypothesis import strategies as st

from gradlab.errors import GradlabError
from gradlab.lessons.jacobian import lesson as J


def test_default_run_holds_every_claim():
    result = J.run(J.Config())
    assert all(c.passed for c in result.claims), [(c.id, c.value) for c in result.claims]
    summed = torch.tensor(result.metrics["summed_gradient"])
    jac = torch.tensor(result.metrics["jacobian"])
    assert jac.shape == (2, 2, 4) and torch.allclose(summed, jac.sum(0))


def test_closed_form_by_hand():
    X = torch.tensor([[0.0, 0.0], [0.0, 0.0]], dtype=torch.float64)
    y = torch.tensor([1.0, 2.0], dtype=torch.float64)
    # At X = 0, p = (1/2, 1/2): ∂W_0/∂X = (e_0 − p) yᵀ = [[0.5, 1], [−0.5, −1]].
    jac = J.jacobian_loop(lambda X_: J.policy(X_, y), X)
    assert jac[0].tolist() == [[0.5, 1.0], [-0.5, -1.0]]
    assert jac.sum(0).tolist() == [[0.0, 0.0], [0.0, 0.0]]  # Σ_i (e_i − p) = 1 − 2p = 0 for two outputs


@settings(max_examples=20, deadline=None)
@given(k=st.integers(1, 5), m=st.integers(1, 5), seed=st.integers(0, 10**6))
def test_all_methods_agree_on_random_shapes(k, m, seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(k, m, generator=g, dtype=torch.float64)
    y = torch.randn(m, generator=g, dtype=torch.float64)

    def f(X_):
        return J.policy(X_, y)

    ref = J.jacobian_loop(f, X)
    p = torch.softmax(X @ y, 0)
    closed = torch.stack([torch.outer(torch.eye(k, dtype=X.dtype)[i] - p, y) for i in range(k)])
    assert torch.allclose(ref, closed, atol=1e-12)
    for name, method in J.METHODS.items():
        assert torch.allclose(method(f, X), ref, atol=1e-12), name


def test_hessian_is_symmetric_and_matches_finite_differences():
    result = J.run(J.Config(output=1))
    claims = {c.id: c for c in result.claims}
    assert claims["hessian-symmetric"].passed and claims["hessian-finite-differences"].passed
    H = torch.tensor(result.metrics["hessian"])
    assert torch.allclose(H, H.T) and H.abs().max() > 0.01


def test_non_scalar_error_message():
    X = torch.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        torch.autograd.grad(J.policy(X, torch.ones(3)), X)
    assert "only for scalar outputs" in J.run(J.Config()).tables[1].note


def test_a_wrong_method_fails_its_claim(monkeypatch):
    monkeypatch.setitem(J.METHODS, "torch.func.jacfwd", lambda f, x: J.jacfwd(f)(x) * 1.001)
    claims = {c.id: c for c in J.run(J.Config()).claims}
    assert not claims["methods-agree"].passed


def test_scaling_table_and_plot(tmp_path):
    out, png = tmp_path / "r.json", tmp_path / "s.png"
    result = invoke("jacobian", "--scaling", "--sizes", "4,16", "--repeats", "1", "--json",
                                      str(out), "--plot", str(png))
    assert result.exit_code == 0, result.output
    r = json.loads(out.read_text())
    assert set(r["metrics"]["scaling"]) == {"4", "16"} and r["data"] is None
    assert png.read_bytes()[:4] == b"\x89PNG" and "threads" in result.output


@pytest.mark.parametrize(("args", "fragment"), [
    (["--matrix", "1,2;3"], "rows of different lengths"),
    (["--matrix", "1,2;3,4"], "--matrix has 2 columns but --state has 4 numbers"),
    (["--state", "1,x,3,4"], "'x' is not a number"),
    (["--matrix", "1,2,3,nan;1,2,3,4"], "not a finite number"),
    (["--output", "2"], "--output 2 is out of range"),
    (["--plot", "p.png"], "only with --scaling"),
    (["--sizes", "0,8", "--scaling"], "--sizes must be between 1 and 4096"),
])
def test_cli_bad_inputs(args, fragment):
    assert_one_line_error(invoke("jacobian", *args), fragment)


def test_config_validation():
    with pytest.raises(GradlabError, match="--repeats must be at least 1"):
        J.Config(repeats=0)


@settings(max_examples=20, deadline=None)
@given(k=st.integers(2, 4), m=st.integers(1, 4), seed=st.integers(0, 10**6))
def test_tf_hessians_way_matches_jacfwd_of_jacrev(k, m, seed):
    """Issue #26, 8: TF-1 had tf.hessians (the gradient once, then a loop differentiating each of its entries); its
    way, written with autograd, gives the Hessian jacfwd(jacrev(f)) gives."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(k, m, generator=g, dtype=torch.float64)
    y = torch.randn(m, generator=g, dtype=torch.float64)

    def f(X_):
        return J.policy(X_, y)[0]

    H = J.hessian_loop(f, X)
    assert H.shape == (k, m, k, m)
    assert torch.allclose(H, J.jacfwd(J.jacrev(f))(X), atol=1e-12)
    assert torch.allclose(H.reshape(k * m, k * m), J.hessian_fd(f, X).reshape(k * m, k * m), atol=1e-6)


def test_a_wrong_hessian_fails_its_claim(monkeypatch):
    monkeypatch.setitem(J.HESSIANS, "tf.hessians' way: a loop over the gradient",
                        lambda f, x: J.hessian_loop(f, x) * 1.001)
    claims = {c.id: c for c in J.run(J.Config()).claims}
    assert not claims["hessians-agree"].passed and claims["hessian-finite-differences"].passed
