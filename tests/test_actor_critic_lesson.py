"""The actor-critic lesson: explicit gradients ≡ backward, parameter get/set, smoke runs, bad inputs."""

import json
import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from conftest import assert_one_line_error, invoke

from gradlab.errors import GradlabError
from gradlab.kit.optim import TFRMSprop
from gradlab.lessons.actor_critic import lesson as A

TINY = A.Config(total_steps=800, envs=4, hidden=16, eval_episodes=1, windows=2)


def test_critic_update_explicit_equals_backward_on_one_batch():
    torch.manual_seed(0)
    s, target = torch.randn(32, 4), torch.randn(32)
    nets = [A.mlp(4, 1, 16) for _ in range(2)]
    nets[1].load_state_dict(nets[0].state_dict())
    opts = [torch.optim.RMSprop(n.parameters(), lr=1e-2) for n in nets]
    for _ in range(5):
        out_e = A.critic_update(nets[0], opts[0], s, target, "explicit")
        out_b = A.critic_update(nets[1], opts[1], s, target, "backward")
        assert torch.equal(out_e[0], out_b[0]) and torch.equal(out_e[1], out_b[1])
    assert all(torch.equal(p, q) for p, q in zip(nets[0].parameters(), nets[1].parameters(), strict=True))


def test_explicit_mode_never_accumulates_into_grad():
    """Writing p.grad = g replaces; a forgotten zero_grad in backward mode would accumulate instead."""
    net = A.mlp(4, 1, 8)
    opt = torch.optim.RMSprop(net.parameters(), lr=1e-9)
    s, target = torch.randn(8, 4), torch.randn(8)
    A.critic_update(net, opt, s, target, "explicit")
    first = [p.grad.clone() for p in net.parameters()]
    A.critic_update(net, opt, s, target, "explicit")
    assert all(torch.allclose(a, p.grad, atol=1e-6) for a, p in zip(first, net.parameters(), strict=True))


def test_training_is_bitwise_identical_in_both_modes():
    a, b = A.train(TINY), A.train(replace(TINY, grad_mode="backward"))
    assert a.episodes == b.episodes and torch.equal(a.loss, b.loss) and len(a.episodes) > 5
    assert all(torch.equal(p, q) for p, q in zip(a.critic.parameters(), b.critic.parameters(), strict=True))


def test_get_and_set_parameters_round_trip():
    net, other = A.mlp(4, 1, 16), A.mlp(4, 1, 16)
    flat = A.get_params(net)
    assert flat.numel() == sum(p.numel() for p in net.parameters())
    A.set_params(other, flat)
    assert torch.equal(A.get_params(other), flat)
    A.set_params(other, flat + 1)
    assert not torch.equal(A.get_params(other), flat)  # a real write, not a view of the source
    flat_diff, state_diff, n = A.copy_checks(net, 16, 0)
    assert flat_diff == 0.0 and state_diff == 0.0 and n == flat.numel()


def test_run_claims_on_a_tiny_budget():
    result = A.run(TINY)
    claims = {c.id: c for c in result.claims}
    assert claims["explicit-equals-backward"].passed and claims["copy-flat-vector"].passed
    assert claims["copy-state-dict"].passed
    assert claims["learns"].passed is (result.metrics["eval_mean"] >= 195)
    assert len(result.metrics["window_mean_return"]) == 2


@pytest.mark.parametrize("mode", ["explicit", "backward"])
def test_cli_smoke(tmp_path, mode):
    out = tmp_path / "r.json"
    result = invoke("actor-critic", "--grad-mode", mode, "--total-steps", "400", "--envs", "4",
                                      "--eval-episodes", "1", "--json", str(out))
    assert result.exit_code in (0, 1), result.output  # 400 steps cannot learn: the 'learns' claim may fail
    r = json.loads(out.read_text())
    assert r["config"]["grad_mode"] == mode and "critic loss" in result.output


@pytest.mark.parametrize(("args", "fragment"), [
    (["--gamma", "2"], "--gamma must be in [0, 1]"),
    (["--total-steps", "0"], "--total-steps must be at least --envs"),
    (["--critic-lr", "-1"], "--critic-lr must be a positive finite number"),
    (["--envs", "0"], "--envs must be between 1 and 1,024, got 0; try --envs 16"),
    (["--grad-mode", "manual"], "'manual' is not one of"),
])
def test_cli_bad_inputs(args, fragment):
    assert_one_line_error(invoke("actor-critic", *args), fragment)


def test_a_critic_lr_too_small_to_move_a_weight_is_one_line_and_writes_nothing(tmp_path):
    """--critic-lr 1e-45 is positive, so the option takes it, but no replayed RMSProp step then changes a weight: the
    two optimizers cannot be compared (found by tests/test_fuzz_cli.py: a ZeroDivisionError and its traceback). It is
    said once the replay has measured it, in one line, exit 2, no --json written; in Python in keyword terms."""
    import gradlab

    out = tmp_path / "r.json"
    result = invoke("actor-critic", "--total-steps", "200", "--envs", "2", "--eval-episodes", "1", "--eval-every",
                    "100", "--checkpoint-episodes", "1", "--critic-lr", "1e-45", "--json", str(out))
    assert_one_line_error(result, "--critic-lr 1e-45 is too small to move the critic")
    assert "try --critic-lr 0.002" in result.stderr and not out.exists()
    with pytest.raises(GradlabError, match=r"critic_lr 1e-45 is too small .* e\.g\. critic_lr=0\.002"):
        gradlab.run("actor-critic", total_steps=200, envs=2, eval_episodes=1, eval_every=100, checkpoint_episodes=1,
                    critic_lr=1e-45)


def test_config_rejects_negative_entropy():
    with pytest.raises(GradlabError, match="--entropy must be ≥ 0"):
        A.Config(entropy=-0.1)


# ------------------------------------------------------------------------ TFRMSprop: TF-1's RMSProp, by hand

def tf1_rmsprop(theta, grads, lr, decay=0.9, momentum=0.0, epsilon=1e-10, centered=False):
    """TF-1's ApplyRMSProp / ApplyCenteredRMSProp kernels (training_ops.cc, v1.15.0) in float64 numpy, written
    independently of gradlab: the trajectory of theta."""
    ms, mg, mom, out = np.ones_like(theta), np.zeros_like(theta), np.zeros_like(theta), []
    for g in grads:
        ms = ms + (g * g - ms) * (1 - decay)
        mg = mg + (g - mg) * (1 - decay)
        denom = ms - mg * mg + epsilon if centered else ms + epsilon
        mom = mom * momentum + g * lr / np.sqrt(denom)
        theta = theta - mom
        out.append(theta)
    return np.array(out)


GRADS = np.random.default_rng(0).standard_normal((8, 6)) * np.array([1e-3, 0.1, 1.0, 10.0, 0.5, 3.0])


@pytest.mark.parametrize("how", [{}, {"momentum": 0.9}, {"centered": True}, {"centered": True, "momentum": 0.5},
                                 {"epsilon": 0.5}, {"decay": 0.5, "epsilon": 1e-3, "momentum": 0.3}])
def test_tfrmsprop_is_tf1s_formula_computed_by_hand(how):
    p = torch.nn.Parameter(torch.linspace(-1, 1, 6, dtype=torch.float64))
    theta0 = p.detach().numpy().copy()
    opt = TFRMSprop([p], lr=0.01, **how)
    got = []
    for g in GRADS:
        p.grad = torch.from_numpy(g)
        opt.step()
        got.append(p.detach().numpy().copy())
    want = tf1_rmsprop(theta0, GRADS, 0.01, **how)
    assert np.abs(np.array(got) - want).max() <= 1e-15
    # and the formula tells the placement of ε and the start of ms apart (this test could fail)
    other = dict(how, epsilon=how.get("epsilon", 1e-10) + 0.25)
    assert np.abs(tf1_rmsprop(theta0, GRADS, 0.01, **other) - want).max() > 1e-6


def test_tfrmsprop_first_steps_are_tf1s_not_torchs():
    """lr 0.01, a constant gradient g: TF-1's first RMSProp step is lr·g/√(0.9 + 0.1g² + ε), since its mean square
    starts at 1 (tensorflow/python/training/rmsprop.py 1.15, the `ms` slot's ones initializer) and its kernel
    computes ms ← ρ·ms + (1 − ρ)·g², mom ← μ·mom + lr·g/√(ms + ε), var ← var − mom (core/kernels/training_ops.cc,
    ApplyRMSProp; ρ = 0.9, μ = 0, ε = 1e-10 by default). torch's RMSprop starts at 0: its first step is
    lr/√(1 − α) = 0.1 for any |g| ≫ ε."""
    for g in (0.001, 0.1, 1.0, 10.0):
        tf_step = 0.01 * g / math.sqrt(0.9 + 0.1 * g * g + 1e-10)
        p = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
        q = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
        ours, theirs = TFRMSprop([p], lr=0.01), torch.optim.RMSprop([q], lr=0.01)
        p.grad, q.grad = torch.full_like(p, g), torch.full_like(q, g)
        ours.step()
        theirs.step()
        assert -float(p.detach()) == pytest.approx(tf_step, rel=1e-5)
        assert -float(q.detach()) == pytest.approx(0.1, rel=2e-4)
    assert TFRMSprop([torch.nn.Parameter(torch.zeros(1))], lr=0.1).defaults == {
        "lr": 0.1, "decay": 0.9, "momentum": 0.0, "epsilon": 1e-10, "centered": False}


def test_tfrmsprop_imports_torch_only():
    """gradlab/kit/optim.py may run beside a student's code: it imports torch (and __future__), nothing of gradlab."""
    import ast
    from pathlib import Path

    import gradlab.kit.optim

    tree = ast.parse(Path(gradlab.kit.optim.__file__).read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported == {"__future__", "torch"}


def test_the_optimizer_claims_can_fail(monkeypatch):
    """A TFRMSprop whose mean square started at 0 (torch's choice) fails the by-hand claim; torch's RMSprop in
    place of TF-1's makes the two optimizers the same, which fails optimizers-differ."""
    out = A.train(replace(TINY, total_steps=200))
    good = A.optimizer_steps(out.critic_init, out.first_grads, 2e-3)
    assert good.by_hand <= 1e-9 and good.first_ratio >= 3

    class ZeroStart(TFRMSprop):
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if not self.state[p]:
                        self.state[p].update(ms=torch.zeros_like(p), mom=torch.zeros_like(p))
            return super().step(closure)

    monkeypatch.setattr(A, "TFRMSprop", ZeroStart)
    assert A.optimizer_steps(out.critic_init, out.first_grads, 2e-3).by_hand > 1
    monkeypatch.setattr(A, "TFRMSprop", lambda params, lr: torch.optim.RMSprop(params, lr=lr, alpha=0.99, eps=1e-5))
    assert A.optimizer_steps(out.critic_init, out.first_grads, 2e-3).first_ratio == pytest.approx(1.0)


def test_the_optimizer_option_trains_with_torchs_rmsprop_too():
    a, b = A.train(TINY), A.train(replace(TINY, optimizer="torch-rmsprop"))
    assert isinstance(A.make_optimizer("tf1-rmsprop", A.mlp(4, 1, 4).parameters(), 1e-3), TFRMSprop)
    assert not torch.equal(a.loss, b.loss)  # another algorithm, another run
    result = A.run(replace(TINY, optimizer="torch-rmsprop"))
    claims = {c.id: c for c in result.claims}
    assert claims["explicit-equals-backward"].passed and claims["tf1-rmsprop-by-hand"].passed
    assert "torch-rmsprop" in claims["explicit-equals-backward"].text


@pytest.mark.parametrize(("g", "torch_step", "tf1_step"), [(1e-9, 9.090909e-05, 3.152309e-06),
                                                            (1e-6, 9.900990e-04, 7.597469e-04),
                                                            (1.0, 1.000000e-03, 9.999997e-04)])
def test_adams_epsilon_placement_the_readmes_first_steps(g, torch_step, tf1_step):
    """The README's Adam row: torch.optim.Adam's first step, measured, and TF-1's AdamOptimizer's from its formula
    (tensorflow/python/training/adam.py, v1.15.0: lr_t = lr·√(1 − β₂ᵗ)/(1 − β₁ᵗ), step = lr_t·m_t/(√v_t + ε̂)), at
    lr 1e-3, β (0.9, 0.999), ε 1e-8, one constant gradient g."""
    lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
    p = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
    opt = torch.optim.Adam([p], lr=lr, betas=(b1, b2), eps=eps)
    p.grad = torch.full_like(p, g)
    opt.step()
    assert -float(p.detach()) == pytest.approx(torch_step, rel=1e-6)
    m, v = (1 - b1) * g, (1 - b2) * g * g  # m_1, v_1 from zero
    lr_t = lr * np.sqrt(1 - b2) / (1 - b1)
    assert lr_t * m / (np.sqrt(v) + eps) == pytest.approx(tf1_step, rel=1e-6)
    # TF-1's ε̂ acts as torch's ε / √(1 − β₂) at the first step: the same step with that ε
    assert lr * g / (g + eps / np.sqrt(1 - b2)) == pytest.approx(tf1_step, rel=1e-6)


def test_the_critic_exercise_s_optimizer_written_out_is_torch_s_rmsprop():
    """gradlab's side runs critic_update's reference, known mistakes and relations with RMSprop written out: on every
    input each gives what it gives with torch.optim.RMSprop itself (the harness a submission runs in)."""
    from gradlab.kit.exercise import difference
    from gradlab.lessons.actor_critic.exercises.checks import CRITIC

    for case in CRITIC.cases(0):
        for known in (None, *CRITIC.mistakes, *CRITIC.relations):
            real = CRITIC.call(CRITIC.reference if known is None else known.fn, case)
            assert difference(CRITIC.run(known, case), real) <= 1e-6, (case["label"], known)
    def changed_lr(critic, optimizer, s, r, s2, done, gamma):  # the written-out one follows param_groups as torch's
        optimizer.param_groups[0]["lr"] = 0.1
        CRITIC.reference(critic, optimizer, s, r, s2, done, gamma)

    case = CRITIC.cases(0)[0]
    from gradlab.lessons.actor_critic.exercises.checks import _by_hand

    assert difference(_by_hand(changed_lr)(case), CRITIC.call(changed_lr, case)) <= 1e-6


def test_judging_critic_update_never_builds_a_torch_optimizer_in_gradlabs_process():
    """Constructing a torch optimizer imports torch._dynamo (about a second): gradlab's side, which computes the
    reference and diagnoses a wrong answer with every known mistake and relation, does without."""
    import subprocess
    import sys

    code = """
import sys
from gradlab.lessons.actor_critic.exercises.checks import CRITIC
for case in CRITIC.cases(0):
    for known in (None, *CRITIC.mistakes, *CRITIC.relations):
        CRITIC.run(known, case)
print('torch._dynamo' in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "False", out.stderr[-2000:]
