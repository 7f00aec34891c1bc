"""log1pexp and gaussian-policy: golden values, gradcheck of every custom Function, properties, the CLI."""

import json
import math

import mpmath
import pytest
import torch
from conftest import assert_one_line_error, invoke
from hypothesis import given, settings
from hypothesis import strategies as st

from gradlab.errors import GradlabError
from gradlab.lessons.gaussian_policy import lesson as G
from gradlab.lessons.log1pexp import lesson as L
from gradlab.lessons.log1pexp import second as S

# --- log1pexp -------------------------------------------------------------------------------------------------

def test_log1pexp_default_run_holds_every_claim():
    result = L.run(L.Config())
    assert all(c.passed for c in result.claims), [(c.id, c.value) for c in result.claims]


def test_naive_nan_and_where_trap_at_100_float32():
    assert math.isnan(L.value_and_grad(L.naive, 100.0, torch.float32)[1])
    value, grad = L.value_and_grad(L.where_guard, 100.0, torch.float32)
    assert value == 100.0 and math.isnan(grad)  # the value is fixed, the gradient is not
    for port in (L.PortEOnCtx, L.FaithfulPort):
        value, grad = L.value_and_grad(port.apply, 100.0, torch.float32)
        assert math.isinf(value) and grad == 1.0


def test_the_nan_is_zero_times_inf_in_exps_backward_not_inf_over_inf():
    """Issue #26, 1: log's backward gives 1/inf = 0, add passes it on, exp's backward makes 0 · e = 0 · inf."""
    c = L.chain("naive", 100.0)
    assert math.isinf(c["e"]) and math.isinf(c["u"])
    assert c["dy/du"] == 0.0 and c["dy/de"] == 0.0  # an exact zero reaches exp's backward, not a NaN
    assert math.isnan(c["dy/dt"]) and math.isnan(c["dy/dx"])
    assert math.isnan(float(torch.tensor(0.0) * torch.tensor(float("inf"))))
    c = L.chain("naive", 88.0)  # eˣ finite: every link finite, the gradient e/(1 + e) rounds to 1 − 6e-8
    assert math.isfinite(c["e"]) and c["dy/dx"] == pytest.approx(1.0, abs=1e-7)


def test_where_guard_sends_an_exact_zero_and_the_branch_makes_the_nan():
    c = L.chain("torch.where guard", 100.0)
    assert c["y"] == 100.0 and c["dy/dbranch"] == 0.0 and math.copysign(1, c["dy/dbranch"]) == 1.0
    assert c["dy/du"] == 0.0 and c["dy/de"] == 0.0 and math.isnan(c["dy/dt"]) and math.isnan(c["dy/dx"])


@pytest.mark.parametrize("x", [-100.0, -20.0, 0.0, 19.9, 20.0, 88.0, 89.0, 100.0, 1000.0, 3e38])
def test_double_where_gives_a_finite_gradient_everywhere(x):
    c = L.chain("double where", x)
    assert math.isfinite(c["dy/dx"]) and math.isfinite(c["dy/dt"]) and math.isfinite(c["e"])
    value, grad = L.value_and_grad(L.double_where, x, torch.float32)
    assert grad == pytest.approx(L.exact(x)[1], rel=1e-6, abs=1e-30)
    if x >= L.GUARD:
        assert value == float(torch.tensor(x)) and c["t"] == 0.0 and c["e"] == 1.0  # the unused branch sees exp(0)


@settings(max_examples=200, deadline=None)
@given(st.floats(-1e4, 1e4, allow_nan=False), st.sampled_from(["float32", "float64"]))
def test_stable_log1pexp_is_finite_and_within_a_few_ulps(x, dtype_name):
    dtype = L.DTYPES[dtype_name]
    x = float(torch.tensor(x, dtype=dtype))  # a number representable in the dtype
    value, grad = L.value_and_grad(L.StableLog1pExp.apply, x, dtype)
    v_exact, g_exact = L.exact(x)
    assert math.isfinite(value) and math.isfinite(grad)
    assert L.ulps(value, v_exact, dtype) <= L.ULP_BOUND
    assert L.ulps(grad, g_exact, dtype) <= L.ULP_BOUND


def test_exact_reference():
    v, g = L.exact(0.0)
    assert v == pytest.approx(math.log(2), rel=1e-16) and g == 0.5
    with mpmath.workdps(30):
        assert L.exact(-700.0)[0] == pytest.approx(float(mpmath.exp(-700)), rel=1e-15)


@pytest.mark.parametrize("fn", [L.StableLog1pExp.apply, L.PortEOnCtx.apply, L.FaithfulPort.apply,
                                L.PortEOnCtxOnce.apply])
def test_gradcheck_of_every_function(fn):
    x = torch.linspace(-6, 6, 13, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(fn, (x,))


def test_both_ports_give_the_tutorials_values_and_gradients():
    """The e-on-ctx port and the faithful port differ only in the second derivative."""
    for dtype in (torch.float32, torch.float64):
        for x in [float(v) for v in L.DEFAULT_X.split(",")]:
            a = L.value_and_grad(L.PortEOnCtx.apply, x, dtype)
            b = L.value_and_grad(L.FaithfulPort.apply, x, dtype)
            assert a == b or all(math.isnan(u) and math.isnan(v) for u, v in zip(a, b, strict=True))


def test_gradgradcheck_stable_and_faithful_pass_e_on_ctx_fails():
    x = torch.linspace(-6, 6, 13, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(L.StableLog1pExp.apply, (x,))
    assert torch.autograd.gradgradcheck(L.FaithfulPort.apply, (x,))
    assert not torch.autograd.gradgradcheck(L.PortEOnCtx.apply, (x,), raise_exception=False)
    assert not torch.autograd.gradgradcheck(L.PortEOnCtxOnce.apply, (x,), raise_exception=False)


def test_second_derivatives_of_the_ports():
    """Issue #26, 2: the faithful port (e rebuilt from x in backward, as TF-1's graph did) has f'' = sigmoid'; the port
    that keeps e on ctx silently drops the f'' term of d²/dx² Σ f², or raises, depending on how it is asked."""
    stable, faithful = S.second_derivatives(L.StableLog1pExp.apply), S.second_derivatives(L.FaithfulPort.apply)
    for r in S.SECOND_ROUTES:
        assert stable[r] < 1e-12 and faithful[r] < 1e-12, r  # includes x = 0, where |x| is not smooth
    port = S.second_derivatives(L.PortEOnCtx.apply)
    assert port["f'': grad twice of Σ f"] == 'raises "does not require grad"'
    f2 = torch.sigmoid(S.SECOND_X) * (1 - torch.sigmoid(S.SECOND_X))
    missing = float((2 * torch.log1p(torch.exp(S.SECOND_X)) * f2).abs().max())  # max |2f·f''| = 0.516
    for r in S.SECOND_ROUTES[1:]:
        assert port[r] == pytest.approx(missing, rel=1e-12), r
    assert S.port_without_f2_term(L.PortEOnCtx.apply) < 1e-12  # exactly 2f'²: the f'' term is what is missing
    x = S.SECOND_X.clone().requires_grad_(True)
    (g,) = torch.autograd.grad((L.PortEOnCtx.apply(x) ** 2).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    assert torch.allclose(h, 2 * torch.sigmoid(S.SECOND_X) ** 2, rtol=0, atol=1e-15)
    assert S.stored_e_has_no_graph(L.PortEOnCtx.apply)


def test_once_differentiable_raises_on_backward_but_not_everywhere():
    """What @once_differentiable does, measured: .backward() raises its message, autograd.grad says x
    was not used, autograd.functional.hessian returns zeros without a word."""
    once = S.second_derivatives(L.PortEOnCtxOnce.apply)
    assert once["Σ f²: .backward() on the grad"] == 'raises "trying to differentiate twice"'
    assert "marked with @once_differentiable" in once["Σ f²: .backward() on the grad (message)"]
    assert once["Σ f²: grad twice"] == 'raises "appears to not have been used in the graph"'
    assert S.hessian_is_zero(L.PortEOnCtxOnce.apply) and not S.hessian_is_zero(L.FaithfulPort.apply)


def test_a_right_port_would_fail_the_port_claim(monkeypatch):
    """The claims about the e-on-ctx port can fail: give it a backward that rebuilds e from x and they do."""
    monkeypatch.setattr(L, "PortEOnCtx", L.FaithfulPort)
    claims = {c.id: c for c in L.run(L.Config(x="0,100", dtype="float32")).claims}
    assert not claims["port-e-on-ctx-second-wrong"].passed and claims["faithful-port-second-right"].passed


def test_a_single_where_would_fail_the_double_where_claim(monkeypatch):
    monkeypatch.setitem(L.METHODS, "double where", L.where_guard)
    claims = {c.id: c for c in L.run(L.Config(x="0,100", dtype="float32")).claims}
    assert not claims["double-where-grad"].passed


def test_log1pexp_cli(tmp_path):
    out = tmp_path / "r.json"
    result = invoke("log1pexp", "--x", "0,100", "--dtype", "float32", "--json", str(out))
    assert result.exit_code == 0, result.output
    r = json.loads(out.read_text())
    assert r["metrics"]["float32"][1]["naive log(1+exp(x))"]["grad"] == "nan"  # NaN written as a string
    assert "float64" not in r["metrics"]


@pytest.mark.parametrize(("args", "fragment"), [
    (["--dtype", "float16"], "'float16' is not one of"),
    (["--x", "1,abc"], "'abc' is not a number"),
    (["--x", "1,inf"], "must be finite"),
])
def test_log1pexp_bad_inputs(args, fragment):
    assert_one_line_error(invoke("log1pexp", *args), fragment)


def test_unknown_dtype_in_config():
    with pytest.raises(GradlabError, match="unknown --dtype 'half'"):
        L.Config(dtype="half")


# --- gaussian-policy ------------------------------------------------------------------------------------------

def test_golden_score_values():
    """μ=0.3, σ=0.7, a=1.1: ∂/∂μ = 0.8/0.49 = 1.6326531; ∂/∂σ = 0.15/0.343 = 0.43731778 exactly, and the
    issue's golden 0.4373180 is what float32 arithmetic gives (0.43731797)."""
    mu, sigma, a = (torch.tensor([v], dtype=torch.float32) for v in (0.3, 0.7, 1.1))
    d_mu, d_sigma = G.score_autograd(mu, sigma, a, G.GaussianLogProb.apply)
    assert round(float(d_mu), 7) == 1.6326531 and round(float(d_sigma), 7) == 0.4373180
    mu, sigma, a = (torch.tensor([v], dtype=torch.float64) for v in (0.3, 0.7, 1.1))
    d_mu, d_sigma = G.score_autograd(mu, sigma, a, G.GaussianLogProb.apply)
    assert float(d_mu) == pytest.approx(0.8 / 0.49, rel=1e-14) and float(d_sigma) == pytest.approx(0.15 / 0.343,
                                                                                                   rel=1e-14)


def test_layer_forward_is_normal_log_prob():
    mu, sigma, a = torch.tensor([0.3, -1.0]), torch.tensor([0.7, 2.0]), torch.tensor([1.1, 0.5])
    assert torch.allclose(G.GaussianLogProb.apply(mu, sigma, a), G.normal_log_prob(mu, sigma, a), atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6))
def test_layer_gradcheck_and_gradgradcheck(seed):
    g = torch.Generator().manual_seed(seed)
    mu = torch.randn(3, generator=g, dtype=torch.float64, requires_grad=True)
    sigma = (torch.rand(3, generator=g, dtype=torch.float64) + 0.2).requires_grad_(True)
    a = torch.randn(3, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(G.GaussianLogProb.apply, (mu, sigma, a))
    assert torch.autograd.gradgradcheck(G.GaussianLogProb.apply, (mu, sigma, a))


def test_reinforce_reaches_the_optimum_and_sigma_shrinks():
    result = G.run(G.Config(epochs=150))
    claims = {c.id: c for c in result.claims}
    assert all(c.passed for c in result.claims), [(c.id, c.value) for c in result.claims]
    assert claims["reinforce-reaches-optimum"].value < 0.1
    assert max(result.metrics["final_sigma"]) < 0.5


def test_a_wrong_backward_fails_the_claims(monkeypatch):
    def wrong_backward(ctx, dy):
        mu, sigma, a = ctx.saved_tensors
        return dy * (a - mu) / sigma, dy * 0 * sigma, None  # forgot a σ and the σ-gradient

    monkeypatch.setattr(G.GaussianLogProb, "backward", staticmethod(wrong_backward))
    claims = {c.id: c for c in G.run(G.Config(epochs=5)).claims}
    assert not claims["layer-equals-normal"].passed and not claims["gradcheck"].passed


def test_the_seeds_layer_as_written():
    """Issue #26, 3: seed 000's layer, ported line by line: Normal(0, 0) samples 0, so a = μ; the forward returns the
    scores (0, 0, −1/σ₀, −1/σ₁), not ln π; the backward sends y (its input) back, not the score."""
    y = torch.tensor([[0.3, -0.5, 0.7, 1.2]])
    action, out, grads = G.seed_layer(y)
    assert torch.equal(action, y[:, :2])
    assert torch.allclose(out, torch.tensor([[0.0, 0.0, -1 / 0.7, -1 / 1.2]]), rtol=0, atol=1e-6)
    assert torch.equal(grads, y)
    # an [n] sample against an [n, 2] sigma: n = 2 pairs sample j with column j, n = 3 does not broadcast
    sample, sigma = torch.tensor([1.0, 2.0]), torch.ones(2, 2)
    assert (sample * sigma).tolist() == [[1.0, 2.0], [1.0, 2.0]]  # noise varies along the action axis, not the batch
    assert "must match the size of tensor b (2)" in G.seed_broadcast_error(3)
    assert G.seed_broadcast_error(1) == "(no error)"


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6))
def test_through_the_sample_autograd_gives_0_and_minus_1_over_sigma_not_the_score(seed):
    g = torch.Generator().manual_seed(seed)
    mu = torch.randn(3, generator=g, dtype=torch.float64)
    sigma = torch.rand(3, generator=g, dtype=torch.float64) + 0.2
    a = mu + sigma * torch.randn(3, generator=g, dtype=torch.float64)
    d_mu, d_sigma = G.score_through_sample(mu, sigma, a)
    assert torch.allclose(d_mu, torch.zeros(3, dtype=torch.float64), atol=1e-12)
    assert torch.allclose(d_sigma, -1 / sigma, rtol=1e-12)
    closed = G.score_closed_form(mu, sigma, a)  # detached: autograd gives the score
    assert all(torch.allclose(u, v, rtol=1e-12) for u, v in
               zip(G.score_autograd(mu, sigma, a, G.normal_log_prob), closed, strict=True))


def test_through_sample_claim_can_fail():
    """At a = μ (ε = 0) the pathwise gradient (0, −1/σ) is the score: the claim then fails, as it should."""
    claims = {c.id: c for c in G.run(G.Config(action="0.3,-0.5", epochs=2)).claims}
    assert not claims["through-sample-differs"].passed


def test_leave_one_out_baseline_is_unbiased_and_the_batch_mean_shrinks_by_n_minus_1_over_n():
    """The batch mean's bias, measured: r_k − mean(r) = (N − 1)/N · (r_k − b_k) batch by batch, and over many batches
    of N = 2 the leave-one-out estimate averages to ∇E[r] = (−2(μ − a*), −2σ) while the batch mean gives half of it."""
    g = torch.Generator().manual_seed(0)
    r = torch.randn(64, generator=g, dtype=torch.float64)
    assert torch.allclose(r - r.mean(), 63 / 64 * (r - G.leave_one_out(r)), rtol=0, atol=1e-14)
    mu, sigma = torch.tensor([0.3, -0.5], dtype=torch.float64), torch.tensor([0.7, 1.2], dtype=torch.float64)
    optimum = torch.tensor([1.5, -0.8], dtype=torch.float64)
    exact = torch.cat([-2 * (mu - optimum), -2 * sigma])  # ∇_(μ, σ) E[−‖a − a*‖²]
    M, N = 200_000, 2
    a = mu + sigma * torch.randn(M, N, 2, generator=g, dtype=torch.float64)
    r = -((a - optimum) ** 2).sum(-1)  # (M, N)
    score = torch.cat(G.score_closed_form(mu, sigma, a), dim=-1)  # (M, N, 4)
    loo = (r - (r.sum(1, keepdim=True) - r) / (N - 1))
    for baseline, expected in ((loo, exact), (r - r.mean(1, keepdim=True), exact * (N - 1) / N)):
        per_batch = (baseline.unsqueeze(-1) * score).mean(1)  # (M, 4): one gradient estimate per batch
        mean, se = per_batch.mean(0), per_batch.std(0) / M**0.5
        assert ((mean - expected).abs() < 5 * se).all(), (mean, expected, se)
    assert ((mean - exact).abs() > 10 * se).any()  # the batch mean's bias is visible at N = 2
    spread = {name: (b.unsqueeze(-1) * score).mean(1).std(0) for name, b in (("loo", loo), ("none", r))}
    assert (spread["loo"] < spread["none"]).all()  # and the baseline cuts the variance (no baseline: b = 0)


def test_with_adam_the_baselines_give_the_same_run(monkeypatch):
    """Adam's step m̂/(√v̂ + ε) ignores a constant factor on the gradient: the batch mean's (N − 1)/N changes the run
    only by rounding."""
    loo = G.reinforce(G.Config(epochs=60), lambda *a: None)
    monkeypatch.setattr(G, "leave_one_out", lambda r: r.mean().expand_as(r))
    mean = G.reinforce(G.Config(epochs=60), lambda *a: None)
    assert max(abs(u - v) for p, q in zip(loo.mu, mean.mu, strict=True) for u, v in zip(p, q, strict=True)) < 1e-5


def test_twenty_updates_fall_short_even_with_the_exact_gradient():
    """Notebook 05: Adam moves each coordinate by about lr per update, so 20 × 0.05 cannot carry μ₀ = 0.3 to
    a*₀ = 1.5; the exact gradient falls short too."""
    result = G.run(G.Config(epochs=20))
    m = result.metrics
    assert m["exact_final_distance"] > 0.1 and m["final_distance"] > 0.1
    assert m["max_mu_step"] <= 0.05 * 1.001 and m["exact_max_mu_step"] <= 0.05 * 1.001
    assert not {c.id: c for c in result.claims}["reinforce-reaches-optimum"].passed
    assert G.run(G.Config(epochs=30)).metrics["exact_final_distance"] < 0.1  # 1.2/0.05 = 24 updates: 30 suffice


def test_given_action_and_cli(tmp_path):
    out = tmp_path / "r.json"
    result = invoke("gaussian-policy", "--mu", "0.3", "--sigma", "0.7", "--action", "1.1", "--optimum", "1.0",
                    "--epochs", "100", "--json", str(out))
    assert result.exit_code == 0, result.output
    r = json.loads(out.read_text())
    assert r["metrics"]["layer"][0][0] == pytest.approx(1.6326531, abs=1e-5)
    assert "a given" in result.output


@pytest.mark.parametrize(("args", "fragment"), [
    (["--sigma", "0.7,0"], "σ must be between 1e-12 and 1e+12"),
    (["--sigma", "-1,1"], "σ must be between"),
    (["--sigma", "1e-45,1"], "σ³ and 1/σ³ must be float32 numbers"),
    (["--sigma", "1e-30,1"], "σ must be between"),  # σ² underflows to 0 in float32
    (["--mu", "0.1,0.2,0.3"], "one number per action dimension"),
    (["--action", "1"], "--action has 1 numbers but --mu has 2"),
    (["--mu", "a,b"], "use comma-separated numbers"),
    (["--mu", "0.0,1e39"], "every number must be a finite float32"),  # finite in Python, inf in the lesson's float32
    (["--optimum", "inf,0"], "every number must be a finite float32"),
    (["--samples", "1"], "--samples must be between 2"),
])
def test_gaussian_policy_bad_inputs(args, fragment):
    assert_one_line_error(invoke("gaussian-policy", *args), fragment)


def test_the_faithful_ports_float32_second_derivative_underflows_before_ex_overflows():
    """Issue #47, 1: f'' = e · 1/(1 + e)² is 0 in float32 while eˣ is finite and the exact f'' a normal float."""
    kept = S.f2_float32(L.FaithfulPort.apply, False)
    assert 40 <= kept["last_right_x"] < kept["first_zero_x"] < 89 == kept["first_nan_x"]
    assert kept["exact_at_first_zero"] > torch.finfo(torch.float32).tiny
    flushed = S.f2_float32(L.FaithfulPort.apply, True)
    assert flushed is None or flushed["first_zero_x"] < kept["first_zero_x"]
    assert torch.tensor(1e-40) != 0  # the flush was undone
