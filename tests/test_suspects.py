"""#45: a diagnosis offers a cause only where an experiment confirms it (the mistake applied to the reference gives the
student's values), names the causes an experiment ruled out as such, and says so where the values cannot tell two
causes apart. Each test is one blind-corpus file (tests/practice_corpus_blind/) or a few lines of a student's, judged
in this process (tests/inprocess.py); each failed before the change it checks."""

import sys
from pathlib import Path

import pytest
import torch
from inprocess import judged, judged_file
from test_diagnosis import fn_of, said

from gradlab.practice import all_exercises, checks_of
from gradlab.practice.classroom import course

BLIND = Path(__file__).parent / "practice_corpus_blind"


@pytest.fixture(scope="module", autouse=True)
def graded_variants():
    """The teacher kit's graded variants, loaded as its course file loads them; gradlab's exercises as they were,
    afterwards."""
    before = dict(all_exercises())
    course.read(str(Path(__file__).parent.parent / "teacher" / "graded" / "course.toml"))
    yield
    all_exercises().clear()
    all_exercises().update(before)
    for name in [m for m in sys.modules if m.startswith("gradlab_own_")]:
        del sys.modules[name]


def blind(name: str) -> str:
    result = judged_file(str(BLIND / name), name.split("/")[0])
    assert result.exit_code == 1
    return said(result)


class _Lab:
    """A Lab whose cause gives THEIRS on every input."""

    def __init__(self, theirs: list[dict]) -> None:
        self.theirs = theirs

    def out(self, what, i: int) -> dict:
        return self.theirs[i]


def test_a_cause_reproduces_the_students_values_non_finite_where_they_are():
    from gradlab.kit.exercise import Cause
    from gradlab.practice.judging.suspects import reproduces

    nan, one = torch.tensor([float("nan"), 1.0]), torch.tensor([2.0, 1.0])
    cause = Cause(words="c")
    assert reproduces(_Lab([{"y": torch.tensor([float("inf"), 1.0])}]), cause, [{"y": nan}])
    assert not reproduces(_Lab([{"y": one}]), cause, [{"y": nan}])  # finite where yours is NaN
    assert not reproduces(_Lab([{"y": torch.tensor([float("nan"), 1.1])}]), cause, [{"y": nan}])
    assert not reproduces(_Lab([{"y": one.reshape(2, 1)}]), cause, [{"y": one}])


@pytest.mark.parametrize("name", ["actor-critic.actor_loss/wrong_sum_not_mean.py",
                                  "actor-critic.critic_update/wrong_sum_not_mean.py"])
def test_a_sum_where_the_mean_belongs_is_not_also_told_to_squeeze_v(name):
    text = blind(name)
    assert "a sum over the transitions where the mean belongs (N times too large on a batch) (measured: applied to " \
           "the reference, it gives your values on every input)" in text, text
    assert "squeeze V(s)" not in text and "(N, 1)" not in text, text


def test_the_broadcast_is_said_where_it_gives_the_students_values_and_the_sum_is_not():
    text = blind("actor-critic.critic_update/wrong_no_squeeze_broadcast.py")
    assert "V(s) of shape (N, 1) against the target (N,): (N,) − (N, 1) is an (N, N) matrix (measured" in text, text
    assert "where the mean belongs" not in text and text.count("squeeze V(s) to shape (N,)") == 1, text


def test_a_q_of_shape_n1_is_not_also_told_a_sum_or_another_action():
    text = blind("dqn.td_loss/wrong_q_not_squeezed.py")
    assert "Q(s, a) of shape (N, 1) against y of shape (N,), which broadcast to (N, N) (measured" in text, text
    assert "where the mean belongs" not in text and "another action" not in text, text


def test_the_termination_family_says_the_measured_cause_not_a_stock_one():
    text = blind("actor_critic_graded.critic_update/wrong_done_next_step.py")
    assert "every step's (1 − done_t) cuts the sum" not in text and "multiplies the reward too" not in text, text
    assert "each return cut by the next step's flag done_{t+1}, not done_t (measured" in text, text
    assert text.count("step t's return is cut by its own flag") == 1, text  # the relation's fix not said twice


def test_a_cause_the_values_rule_out_is_said_as_ruled_out():
    text = blind("gaussian_policy_graded.score/wrong_variance_log_term.py")
    assert "the derivative is in σ, not log σ" not in text, text
    assert "the third output taken with respect to σ instead of log σ alone does not give your values (measured: " \
           "applied alone to the reference)" in text, text


def test_a_nan_from_exp_is_not_blamed_on_zero_weights_too():
    text = blind("mnist_graded.weighted_softmax_grad/wrong_unstable_softmax.py")
    assert "0/0 where every weight is 0" not in text, text
    assert "exp(z) overflows in float32 above z ≈ 88.7 (the softmax without its max shift) (measured" in text, text


def test_log_std_used_as_sigma_is_confirmed_by_running_it():
    text = blind("gaussian_policy_graded.score/wrong_log_std_as_sigma.py")
    assert "σ = log_std, the exp forgotten (σ is 0 where log σ = 0, and negative below) (measured: applied to the " \
           "reference, it gives your values on every input): σ = log_std.exp()" in text, text


def test_only_the_last_parts_gradient_is_confirmed_as_zero_grad_in_the_loop():
    text = blind("ddp.accumulated_grad/wrong_zero_grad_in_loop.py")
    assert text.index("w_k = the last part's n_K/B alone") < text.index("zero_grad() inside the loop"), text
    assert "(measured: applied to the reference, it gives your gradients on every input): zero the gradients once, " \
           "before the loop" in text, text


def test_the_forbidden_call_leads_and_nothing_runs_together():
    for name, call in (("jacobian.hvp/wrong_uses_library_hessian.py", "torch.autograd.functional.hessian"),
                       ("mnist.sgd_step/wrong_uses_optim_sgd.py", "torch.optim.SGD"),
                       ("gaussian-policy.score/wrong_uses_normal_autograd.py", "torch.distributions.Normal.log_prob")):
        result = judged_file(str(BLIND / name), name.split("/")[0])
        assert result.metrics["diagnosis"].startswith(f"uses {call}, which this exercise asks you to write; "), name
        assert not result.notes, result.notes


def test_an_nn_output_is_measured_before_its_cause_is_said():
    text = blind("dqn.td_target/wrong_keepdim_broadcast.py")
    assert "an (N, N) matrix whose diagonal is the expected (measured)" in text, text
    assert "the bootstrap max target(s2) kept as (N, 1), against r and done of shape (N,) (measured" in text, text
    assert "product with a vector" not in text, text
    whole = judged("jacobian.hvp", fn_of("jacobian.hvp", """
        def hvp(f, x, v):
            return torch.autograd.functional.hessian(f, x)
        """))
    assert "the whole (N, N) matrix, whose product with v is the expected (measured)" in said(whole), said(whole)


def test_a_loop_that_returned_in_its_first_pass_is_told_from_a_short_range():
    text = blind("jacobian.jacobian_loop/wrong_return_in_loop.py")
    assert "the first row of the expected 3, each right (the loop stopped after its first pass: a return inside " \
           "the loop)" in text and "range" not in text, text


LOG1PEXP_BACKWARDS = {  # three ways to a backward that is a constant to autograd
    "saved": """
        class Log1pExp(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(torch.sigmoid(x))
                return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

            @staticmethod
            def backward(ctx, dy):
                s, = ctx.saved_tensors
                return dy * s
        """,
    "detached": """
        class Log1pExp(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

            @staticmethod
            def backward(ctx, dy):
                x, = ctx.saved_tensors
                return dy * torch.sigmoid(x.detach())
        """,
    "no_grad": """
        class Log1pExp(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

            @staticmethod
            def backward(ctx, dy):
                x, = ctx.saved_tensors
                with torch.no_grad():
                    s = torch.sigmoid(x)
                return dy * s
        """}


def test_causes_the_values_cannot_tell_apart_are_said_so_and_none_heads_the_diagnosis():
    name = "log1pexp.Log1pExp"
    checks = checks_of(all_exercises()[name])
    cases = checks.cases(0)
    outs = {k: [checks.call(fn_of(name, src), c) for c in cases] for k, src in LOG1PEXP_BACKWARDS.items()}
    for k in ("detached", "no_grad"):  # the experiment: the same outputs, every one of them, on every input
        assert all(torch.equal(a[key], b[key]) for a, b in zip(outs["saved"], outs[k], strict=True) for key in a)
    for src in LOG1PEXP_BACKWARDS.values():
        text = said(judged(name, fn_of(name, src)))
        assert text.startswith("second derivative 0: ") and "they cannot be told apart" in text, text
