"""Diagnosis by experiment, proved on the exercises the corpus does not cover: for each new exercise, wrong answers
that are NOT among its known mistakes, written the way students write them, must get a diagnosis that names their
relation (a phrase per answer), and correct answers written differently from the reference must pass. Also: the
pre-flight, the student's output under the checks, the closed forms beside the gloo runs, and the references that
claim to be a library's way are that way to the bit."""

import json
import linecache
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from conftest import invoke
from inprocess import judged, judged_file

from gradlab.practice import all_exercises, checks_of
from gradlab.practice.classroom.starter import starter
from gradlab.practice.judging import submission
from gradlab.practice.judging.check import run_check
from gradlab.practice.judging.judge import Reference, judge
from gradlab.practice.judging.submission import preflight
from gradlab.practice.sandbox.returned import Received


def fn_of(name: str, source: str):
    """The function or class named as exercise NAME's, defined by SOURCE (a student's code)."""
    namespace: dict = {}
    text = "import math\nimport torch\nimport torch.nn.functional as F\n" + textwrap.dedent(source)
    linecache.cache[f"<{name}>"] = (len(text), None, text.splitlines(True), f"<{name}>")  # its lines, as a file's
    exec(compile(text, f"<{name}>", "exec"), namespace)
    return namespace[all_exercises()[name].function]


def said(result) -> str:
    return " ".join(" ".join([result.stopped or "", result.metrics.get("diagnosis") or "", *result.notes]).split())


# (exercise, what the student did, their code, the phrase the diagnosis must contain)
UNKNOWN = [
    ("mnist.LogSoftmax", "the backward's sign flipped", """
        class LogSoftmax(torch.autograd.Function):
            @staticmethod
            def forward(ctx, z):
                ctx.save_for_backward(z)
                return z - torch.logsumexp(z, dim=-1, keepdim=True)

            @staticmethod
            def backward(ctx, dy):
                z, = ctx.saved_tensors
                return torch.softmax(z, dim=-1) * dy.sum(dim=-1, keepdim=True) - dy
        """, "the gradient = −1 × the expected: the sign is flipped"),
    ("mnist.LogSoftmax", "a sum without keepdim in backward", """
        class LogSoftmax(torch.autograd.Function):
            @staticmethod
            def forward(ctx, z):
                ctx.save_for_backward(z)
                return z - torch.logsumexp(z, dim=-1, keepdim=True)

            @staticmethod
            def backward(ctx, dy):
                z, = ctx.saved_tensors
                return dy - torch.softmax(z, dim=-1) * dy.sum(dim=-1)
        """, "keepdim=True"),
    ("mnist.LogSoftmax", "float32 inside", """
        class LogSoftmax(torch.autograd.Function):
            @staticmethod
            def forward(ctx, z):
                ctx.save_for_backward(z)
                z32 = z.float()
                return (z32 - torch.logsumexp(z32, dim=-1, keepdim=True)).to(z.dtype)

            @staticmethod
            def backward(ctx, dy):
                z, = ctx.saved_tensors
                return dy - torch.softmax(z, dim=-1) * dy.sum(dim=-1, keepdim=True)
        """, "float32 precision"),
    ("clip.global_norm", "the squared norms averaged over the tensors", """
        def global_norm(grads):
            return torch.sqrt(torch.stack([g.norm() ** 2 for g in grads]).mean())
        """, "1/√T × the expected"),
    ("clip.global_norm", "squares taken in place", """
        def global_norm(grads):
            return torch.sqrt(sum(g.pow_(2).sum() for g in grads))
        """, "changed grads in place"),
    ("clip.global_norm", "a Python float", """
        def global_norm(grads):
            return float(sum((g ** 2).sum() for g in grads)) ** 0.5
        """, "is a float, not a tensor"),
    ("clip.clip_across_ranks", "rescaled to the cap even below it", """
        def clip_across_ranks(grads, clip_norm):
            import torch.distributed as dist
            s = sum((g.double() ** 2).sum() for g in grads).reshape(1)
            dist.all_reduce(s)
            return [g * (clip_norm / float(s.sqrt())) for g in grads]
        """, "scaled up to the cap though the norm is below it"),
    ("clip.clip_across_ranks", "the square root forgotten", """
        def clip_across_ranks(grads, clip_norm):
            import torch.distributed as dist
            s = sum((g.double() ** 2).sum() for g in grads).reshape(1)
            dist.all_reduce(s)
            return [g * (clip_norm / max(float(s), clip_norm)) for g in grads]
        """, "the square root is missing"),
    ("jacobian.vjp", "a mean where vᵀJ sums", """
        def vjp(f, x, v):
            x = x.detach().requires_grad_(True)
            (f(x) * v).mean().backward()
            return x.grad
        """, "1/m × the expected"),
    ("jacobian.vjp", "the caller's x differentiated as given", """
        def vjp(f, x, v):
            return torch.autograd.grad(f(x), x, grad_outputs=v)[0]
        """, "x.detach().requires_grad_(True)"),
    ("jacobian.hvp", "no create_graph", """
        def hvp(f, x, v):
            x = x.detach().requires_grad_(True)
            g, = torch.autograd.grad(f(x), x)
            return torch.autograd.grad((g * v).sum(), x)[0]
        """, "create_graph=True"),
    ("jacobian.hvp", "a mean over the entries", """
        def hvp(f, x, v):
            x = x.detach().requires_grad_(True)
            g, = torch.autograd.grad(f(x), x, create_graph=True)
            return torch.autograd.grad((g * v).mean(), x)[0]
        """, "1/n × the expected"),
    ("jacobian.hvp", "the whole Hessian", """
        def hvp(f, x, v):
            return torch.autograd.functional.hessian(f, x)
        """, "the whole (N, N) matrix, whose product with v is the expected"),
    ("log1pexp.softplus", "the linear part by a bare where", """
        def softplus(x):
            return torch.where(x > 20, x, torch.log1p(torch.exp(x)))
        """, "autograd differentiates both branches"),
    ("log1pexp.softplus", "exp's argument clamped", """
        def softplus(x):
            return torch.log1p(torch.exp(x.clamp(max=80)))
        """, "differs where x ≥ 88"),
    ("gaussian-policy.GaussianLogProb", "dy forgotten", """
        class GaussianLogProb(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, mu, sigma):
                ctx.save_for_backward(a, mu, sigma)
                return torch.distributions.Normal(mu, sigma).log_prob(a)

            @staticmethod
            def backward(ctx, dy):
                a, mu, sigma = ctx.saved_tensors
                d = (a - mu) / sigma ** 2
                return -d, d, ((a - mu) ** 2 - sigma ** 2) / sigma ** 3
        """, "right when dy = 1, wrong for another upstream gradient dy"),
    ("gaussian-policy.GaussianLogProb", "the constant left out", """
        class GaussianLogProb(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, mu, sigma):
                ctx.save_for_backward(a, mu, sigma)
                return -(a - mu) ** 2 / (2 * sigma ** 2) - torch.log(sigma)

            @staticmethod
            def backward(ctx, dy):
                a, mu, sigma = ctx.saved_tensors
                d = (a - mu) / sigma ** 2
                return -dy * d, dy * d, dy * ((a - mu) ** 2 - sigma ** 2) / sigma ** 3
        """, "the constant −½ ln 2π"),
    ("gaussian-policy.GaussianLogProb", "∂/∂σ² for σ", """
        class GaussianLogProb(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, mu, sigma):
                ctx.save_for_backward(a, mu, sigma)
                return -(a - mu) ** 2 / (2 * sigma ** 2) - torch.log(sigma) - 0.5 * math.log(2 * math.pi)

            @staticmethod
            def backward(ctx, dy):
                a, mu, sigma = ctx.saved_tensors
                d = (a - mu) / sigma ** 2
                return -dy * d, dy * d, dy * ((a - mu) ** 2 - sigma ** 2) / (2 * sigma ** 4)
        """, "the derivative with respect to the variance σ²"),
    ("dqn.td_target", "done inverted", """
        def td_target(target, r, s2, done, gamma):
            with torch.no_grad():
                return r + gamma * done * target(s2).max(1).values
        """, "done and 1 − done swapped"),
    ("dqn.td_target", "left in the graph", """
        def td_target(target, r, s2, done, gamma):
            return r + gamma * (1 - done) * target(s2).max(1).values
        """, "your y carries a graph"),
    ("dqn.td_target", "keepdim=True", """
        def td_target(target, r, s2, done, gamma):
            with torch.no_grad():
                return r.unsqueeze(1) + gamma * (1 - done.unsqueeze(1)) * target(s2).max(1, keepdim=True).values
        """, "an extra dimension of size 1"),
    ("actor-critic.actor_loss", "a sum over the batch", """
        def actor_loss(actor, critic, s, a, r, s2, done, gamma):
            with torch.no_grad():
                delta = r + gamma * (1 - done) * critic(s2).squeeze(1) - critic(s).squeeze(1)
            logp = torch.log_softmax(actor(s), dim=1)[torch.arange(len(a)), a]
            return -(logp * delta).sum()
        """, "N × the expected"),
    ("actor-critic.actor_loss", "done ignored", """
        def actor_loss(actor, critic, s, a, r, s2, done, gamma):
            with torch.no_grad():
                delta = r + gamma * critic(s2).squeeze(1) - critic(s).squeeze(1)
            logp = torch.log_softmax(actor(s), dim=1).gather(1, a[:, None]).squeeze(1)
            return -(logp * delta).mean()
        """, "right for non-terminal transitions, wrong for terminal ones"),
    ("actor-critic.actor_loss", "V(s) not squeezed", """
        def actor_loss(actor, critic, s, a, r, s2, done, gamma):
            with torch.no_grad():
                delta = r + gamma * (1 - done) * critic(s2).squeeze(1) - critic(s)
            logp = torch.log_softmax(actor(s), dim=1).gather(1, a[:, None]).squeeze(1)
            return -(logp * delta).mean()
        """, "right for one transition, wrong for a batch"),
    ("gaussian-policy.GaussianLogProb", "the gradients for a and μ returned in each other's place", """
        class GaussianLogProb(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, mu, sigma):
                ctx.save_for_backward(a, mu, sigma)
                return -(a - mu) ** 2 / (2 * sigma ** 2) - torch.log(sigma) - 0.5 * math.log(2 * math.pi)

            @staticmethod
            def backward(ctx, dy):
                a, mu, sigma = ctx.saved_tensors
                g_mu = dy * (a - mu) / sigma ** 2
                g_sigma = dy * ((a - mu) ** 2 - sigma ** 2) / sigma ** 3
                return g_mu, -g_mu, g_sigma
        """, "returned in each other's place? Check the order you return them in"),
    ("actor-critic.actor_loss", "the reward masked by (1 − done) too", """
        def actor_loss(actor, critic, s, a, r, s2, done, gamma):
            with torch.no_grad():
                delta = (r + gamma * critic(s2).squeeze(1)) * (1 - done) - critic(s).squeeze(1)
            logp = torch.log_softmax(actor(s), dim=1).gather(1, a[:, None]).squeeze(1)
            return -(logp * delta).mean()
        """, "multiply only the bootstrap γ · V(s2) by (1 − done), not r"),
    ("ddp.sync_gradients", "reduced to rank 0", """
        def sync_gradients(model):
            import torch.distributed as dist
            for p in model.parameters():
                dist.reduce(p.grad, dst=0)
                p.grad /= dist.get_world_size()
        """, "rank 0's .grad is right on every input"),
    ("ddp.sync_gradients", "averaged twice", """
        def sync_gradients(model):
            import torch.distributed as dist
            world = dist.get_world_size()
            for p in model.parameters():
                p.grad /= world
                dist.all_reduce(p.grad)
                p.grad /= world
        """, "1/W × the expected"),
]


@pytest.mark.parametrize(("name", "what", "source", "phrase"), UNKNOWN, ids=[f"{u[0]}: {u[1]}" for u in UNKNOWN])
def test_a_mistake_nobody_listed_gets_a_diagnosis_naming_it(name, what, source, phrase):
    fn = fn_of(name, source)
    assert all(m.fn is not fn for m in checks_of(all_exercises()[name]).mistakes)
    r = judged(name, fn)
    assert r.exit_code == 1 and phrase in said(r), said(r)


def test_the_cause_comes_before_the_ratios_and_the_ratios_are_said_once():
    """#34: a right cause said after a paragraph of per-input ratios is missed; ratios no quantity names are a
    symptom, said once per output after the causes."""
    r = judged("dqn.td_loss", fn_of("dqn.td_loss", """
        def td_loss(online, target, s, a, r, s2, done, gamma):
            with torch.no_grad():
                y = r + gamma * (1 - done) * target(s2).max(1).values
            return F.smooth_l1_loss(online(s).max(1).values, y, reduction="sum")
        """))
    text = said(r)
    assert r.exit_code == 1 and text.count("× the expected on") == 0, text
    assert text.index("right for one transition") < text.index("a different multiple of the expected"), text


def test_a_near_miss_is_not_called_a_swap_with_an_output_whose_expected_is_the_same():
    """#34: every rank's expected result is the same mean, so a rank's float32-rounded result was "= the expected
    rank 1's result"; it is float32 precision, and the weights are said to be right."""
    r = judged("ddp.average_gradients", fn_of("ddp.average_gradients", """
        def average_gradients(grads, n_local, n_total):
            import torch.distributed as dist
            out = [(g.float() * (n_local / n_total)) for g in grads]
            for t in out:
                dist.all_reduce(t)
            return [t.to(torch.float64) for t in out]
        """))
    text = said(r)
    assert r.exit_code == 1 and "= the expected rank" not in text, text
    assert "float32 precision" in text and "the right weights" in text, text


RIGHT = [
    ("mnist.LogSoftmax", "the output saved, exp(out) in backward", """
        class LogSoftmax(torch.autograd.Function):
            @staticmethod
            def forward(ctx, z):
                out = z - torch.logsumexp(z, dim=-1, keepdim=True)
                ctx.save_for_backward(out)
                return out

            @staticmethod
            def backward(ctx, dy):
                out, = ctx.saved_tensors
                return dy - out.exp() * dy.sum(dim=-1, keepdim=True)
        """),
    ("clip.global_norm", "one vector of everything", """
        def global_norm(grads):
            return torch.linalg.vector_norm(torch.cat([g.reshape(-1) for g in grads]))
        """),
    ("clip.global_norm", "the norm of the norms", """
        def global_norm(grads):
            return torch.norm(torch.stack([g.norm() for g in grads]))
        """),
    ("clip.clip_across_ranks", "a flat bucket", """
        def clip_across_ranks(grads, clip_norm):
            import torch.distributed as dist
            sq = torch.cat([g.reshape(-1) for g in grads]).pow(2).sum().reshape(1)
            dist.all_reduce(sq, op=dist.ReduceOp.SUM)
            scale = torch.clamp(clip_norm / sq.sqrt(), max=1.0)
            return [g * scale for g in grads]
        """),
    ("jacobian.vjp", "backward with v", """
        def vjp(f, x, v):
            x = x.clone().requires_grad_()
            f(x).backward(v)
            return x.grad
        """),
    ("jacobian.hvp", "forward over reverse (torch.func)", """
        def hvp(f, x, v):
            return torch.func.jvp(torch.func.grad(f), (x,), (v,))[1]
        """),
    ("jacobian.hvp", "the dot product differentiated", """
        def hvp(f, x, v):
            x = x.detach().requires_grad_(True)
            g, = torch.autograd.grad(f(x), x, create_graph=True)
            return torch.autograd.grad(g @ v, x)[0]
        """),
    ("log1pexp.softplus", "torch.maximum (its gradient splits a tie: 1/2 at x = 0)", """
        def softplus(x):
            return torch.maximum(x, torch.zeros_like(x)) + torch.log1p(torch.exp(-x.abs()))
        """),
    ("log1pexp.softplus", "the double where", """
        def softplus(x):
            pos = x > 0
            safe_pos = torch.where(pos, x, torch.zeros_like(x))
            safe_neg = torch.where(pos, torch.zeros_like(x), x)
            return torch.where(pos, x + torch.log1p(torch.exp(-safe_pos)), torch.log1p(torch.exp(safe_neg)))
        """),
    ("gaussian-policy.GaussianLogProb", "standardised", """
        class GaussianLogProb(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, mu, sigma):
                ctx.save_for_backward(a, mu, sigma)
                z = (a - mu) / sigma
                return -0.5 * z * z - torch.log(sigma) - 0.5 * math.log(2 * math.pi)

            @staticmethod
            def backward(ctx, dy):
                a, mu, sigma = ctx.saved_tensors
                z = (a - mu) / sigma
                return -dy * z / sigma, dy * z / sigma, dy * (z * z - 1) / sigma
        """),
    ("dqn.td_target", "detach and max(1)[0]", """
        def td_target(target, r, s2, done, gamma):
            return (r + gamma * (1 - done) * target(s2).detach().max(1)[0])
        """),
    ("actor-critic.actor_loss", "cross-entropy is −ln π", """
        def actor_loss(actor, critic, s, a, r, s2, done, gamma):
            v, v2 = critic(s).squeeze(-1), critic(s2).squeeze(-1)
            delta = (r + gamma * (1 - done) * v2 - v).detach()
            return (F.cross_entropy(actor(s), a, reduction="none") * delta).mean()
        """),
    ("actor-critic.actor_loss", "torch.distributions.Categorical", """
        def actor_loss(actor, critic, s, a, r, s2, done, gamma):
            with torch.no_grad():
                delta = r + gamma * (1 - done) * critic(s2)[:, 0] - critic(s)[:, 0]
            return -(torch.distributions.Categorical(logits=actor(s)).log_prob(a) * delta).mean()
        """),
    ("ddp.sync_gradients", "ReduceOp.AVG", """
        def sync_gradients(model):
            import torch.distributed as dist
            for p in model.parameters():
                dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)
        """),
]


@pytest.mark.parametrize(("name", "what", "source"), RIGHT, ids=[f"{r[0]}: {r[1]}" for r in RIGHT])
def test_a_right_answer_written_differently_passes(name, what, source):
    r = judged(name, fn_of(name, source))
    assert r.exit_code == 0, said(r)


def test_the_library_function_an_exercise_asks_you_to_write_is_a_failed_check_of_its_own():
    """log1pexp.softplus asks for softplus written by hand: F.softplus's values pass the value checks, and the call
    fails the check of its own, named (issue #27: a call to what the exercise asks students to write)."""
    r = judged("log1pexp.softplus", fn_of("log1pexp.softplus", """
        def softplus(x):
            return F.softplus(x)
        """))
    assert r.exit_code == 1 and "uses torch.nn.functional.softplus, which this exercise asks you to write" in said(r)
    assert [c.passed for c in r.claims if not c.id.endswith(":own")] == [True] * (len(r.claims) - 1)


def test_every_new_exercise_has_unknown_mistakes_and_right_alternatives():
    new = {"mnist.LogSoftmax", "clip.global_norm", "clip.clip_across_ranks", "jacobian.vjp", "jacobian.hvp",
           "log1pexp.softplus", "gaussian-policy.GaussianLogProb", "dqn.td_target", "actor-critic.actor_loss",
           "ddp.sync_gradients"}
    assert new <= set(all_exercises()) and len(all_exercises()) >= 20
    assert all(sum(u[0] == n for u in UNKNOWN) >= 2 for n in new)
    assert all(any(r[0] == n for r in RIGHT) for n in new)


def test_every_lesson_has_two_exercises_at_different_levels_each_with_three_known_mistakes():
    from gradlab.lessons import LESSONS

    for lesson in LESSONS:
        levels = [e.level for e in all_exercises().values() if e.lesson == lesson]
        assert len(levels) >= 2 and len(set(levels)) >= 2, lesson
    assert all(len(checks_of(e).mistakes) >= 3 for e in all_exercises().values())


def test_the_sgd_reference_is_torch_optim_sgd_to_the_bit():
    checks = checks_of(all_exercises()["mnist.sgd_step"])
    for case in checks.cases(0)[:5]:
        W, b = torch.nn.Parameter(case["W"].clone()), torch.nn.Parameter(case["b"].clone())
        opt = torch.optim.SGD([W, b], lr=case["lr"])
        (-(case["y"] * torch.log_softmax(case["x"] @ W + b, dim=1)).sum(dim=1).mean()).backward()
        opt.step()
        ref = checks.reference(case["W"].clone().requires_grad_(True), case["b"].clone().requires_grad_(True),
                               case["x"], case["y"], case["lr"])
        assert torch.equal(ref[0], W.detach()) and torch.equal(ref[1], b.detach())


def test_a_backward_that_forgets_dy_fails_on_a_random_upstream_gradient():
    fn = fn_of("log1pexp.Log1pExp", """
        class Log1pExp(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

            @staticmethod
            def backward(ctx, dy):
                x, = ctx.saved_tensors
                return torch.sigmoid(x)
        """)
    r = judged("log1pexp.Log1pExp", fn)
    assert r.exit_code == 1 and "expected / dy" in r.metrics["diagnosis"]


def test_a_close_but_not_exact_answer_says_by_how_much_and_why():
    fn = fn_of("log1pexp.Log1pExp", """
        class Log1pExp(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return F.softplus(x)

            @staticmethod
            def backward(ctx, dy):
                x, = ctx.saved_tensors
                return dy * torch.sigmoid(x)
        """)
    r = judged("log1pexp.Log1pExp", fn)
    assert r.exit_code == 0 and any("F.softplus's threshold" in n and "not exact" in n for n in r.notes), r.notes


def test_preflight_reports_a_syntax_error_and_a_missing_function_without_a_process(tmp_path, monkeypatch):

    def no_process(*args, **kwargs):
        raise AssertionError("the pre-flight must not start the sandbox")

    from gradlab.practice.sandbox import box
    monkeypatch.setattr(box, "Sandbox", no_process)
    ex = all_exercises()["mnist.sgd_step"]
    bad = tmp_path / "bad.py"
    bad.write_text("# gradlab-exercise: mnist.sgd_step\ndef sgd_step(W, b, x, y, lr)\n    return W, b\n")
    r = run_check(submission.own(str(bad), bad.read_bytes(), ex.name))
    assert r.stopped.startswith("syntax error at line 2") and r.exit_code == 1
    assert r.claims and all(c.kind == "not reached" and c.mark == "–" and not c.passed for c in r.claims)
    renamed = tmp_path / "renamed.py"
    renamed.write_text("def sgd_Step(W, b, x, y, lr):\n    return W, b\n")
    r = run_check(submission.own(str(renamed), renamed.read_bytes(), ex.name))
    assert "defines no function sgd_step() at its top level (it has sgd_Step: rename it sgd_step)" in r.stopped
    assert preflight(renamed.read_bytes(), str(renamed), all_exercises()["log1pexp.Log1pExp"]).startswith(
        "your file defines no class Log1pExp")
    for fine in ("from helpers import sgd_step\n", "if True:\n    def sgd_step(W, b, x, y, lr):\n        pass\n",
                 "exec('def sgd_step(): pass')\n", "sgd_step = lambda W, b, x, y, lr: (W, b)\n"):
        renamed.write_text(fine)
        assert preflight(renamed.read_bytes(), str(renamed), ex) is None, fine


def test_the_students_output_and_warnings_are_shown_under_the_checks_and_in_json(tmp_path):
    name = "dqn.td_loss"
    ex = all_exercises()[name]
    checks = checks_of(ex)
    cases = checks.cases(0)
    refs = [checks.run(None, c) for c in cases]
    printed = "".join(f"step {i}: loss 0.{i}\n" for i in range(100))
    got = Received(ok=True, outputs=[checks.call(checks.reference, c) for c in cases], printed=printed,
                   printed_bytes=123456, warnings=("UserWarning: Using a target size (torch.Size([32])) that is "
                                                   "different to the input size (torch.Size([32, 1]))",))
    r = judge(ex, Reference(checks, cases, refs), got)
    assert r.metrics["printed"].splitlines()[-1] == "step 99: loss 0.99" and len(r.metrics["printed"].splitlines()) \
        == 20 and r.metrics["printed_bytes"] == 123456 and "target size" in r.metrics["warnings"][0]
    data = r.to_json()
    assert data["metrics"]["printed_lines"] == 100 and json.dumps(data)
    import io

    from gradlab.report.console import make_console, render

    out = io.StringIO()
    render(r, make_console(file=out))
    text = " ".join(out.getvalue().split())
    assert "your code printed 123,456 bytes (100 lines); the last 20:" in text and "step 99: loss 0.99" in text
    assert "warnings your code raised:" in text and "different to the input size" in text
    assert "step 79" not in text
    from gradlab.report.html import lesson_html

    page = lesson_html(data, "", [], None, 0.0)
    assert "your code printed 123,456 bytes" in page and "step 99: loss 0.99" in page


def test_a_function_that_returns_the_wrong_kind_of_thing_is_told_so(tmp_path):
    path = tmp_path / "clip.py"
    path.write_text(starter(all_exercises()["clip.clip_by_global_norm"]).replace(
        '    raise NotImplementedError("write clip_by_global_norm")', "    return grads, 1.0"))
    out = invoke("check", str(path))
    text = " ".join(out.output.split())
    assert out.exit_code == 1 and "clip_by_global_norm() returned on the input" in text and "a tuple" in text


def _leaf_in_place():
    w = torch.zeros(2, requires_grad=True)
    w -= 1


def _backward_twice():
    x = torch.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


def _grad_output_shape():
    x = torch.ones(2, requires_grad=True)
    torch.autograd.grad(x * 2, x, grad_outputs=torch.ones(3))


# Each text a diagnosis looks for in PyTorch's messages, and a line that makes this torch raise it
RAISES = {
    "a leaf Variable that requires grad is being used in an in-place operation": _leaf_in_place,
    "does not require grad and does not have a grad_fn": lambda: torch.zeros(2).sum().backward(),
    "does not require grad": lambda: torch.zeros(2).sum().backward(),
    "Trying to backward through the graph a second time": _backward_twice,
    "must match the size of tensor": lambda: torch.zeros(2) + torch.zeros(3),
    "Mismatch in shape: grad_output": _grad_output_shape,
    "out of bounds": lambda: torch.zeros(2)[5],
    "a view of a leaf Variable that requires grad is being used in an in-place operation":
        lambda: torch.zeros(2, 2, requires_grad=True)[0].mul_(2),
    "modified by an inplace operation": lambda: _saved_in_place(),
    "appears to not have been used in the graph":
        lambda: torch.autograd.grad(torch.ones(2, requires_grad=True).sum(), torch.ones(2, requires_grad=True)),
    "grad can be implicitly created only for scalar outputs":
        lambda: (torch.ones(2, requires_grad=True) * 2).backward(),
    "cannot be multiplied": lambda: torch.zeros(5, 3) @ torch.zeros(4, 3),
    "size mismatch, got input": lambda: torch.zeros(3, 4) @ torch.zeros(3),
    "to have the same dtype": lambda: torch.zeros(2, 3, dtype=torch.float64) @ torch.zeros(3, 2),
    "must have the same dtype": lambda: torch.nn.Linear(3, 2)(torch.zeros(2, 3, dtype=torch.float64)),
    "to have same dtype": lambda: torch.dot(torch.zeros(2, dtype=torch.float64), torch.zeros(2)),
    "expected scalar type": lambda: torch.bmm(torch.zeros(1, 2, 2, dtype=torch.float64), torch.zeros(1, 2, 2)),
    "requires the source and destination dtypes match":
        lambda: torch.zeros(3).index_put_((torch.tensor([0]),), torch.zeros(1, dtype=torch.float64)),
    "expected target dtype to be Long": lambda: torch.nn.functional.cross_entropy(torch.zeros(3, 2),
                                                                                  torch.tensor([0.0, 1.0, 1.0])),
    "tensors used as indices must be long": lambda: torch.zeros(3)[torch.tensor([0.0])],
    "Found no NVIDIA driver": lambda: _no_gpu(),
    "is not on the expected device": lambda: torch.zeros(2) + torch.zeros(2, device="meta"),
    "Can't call numpy() on Tensor that requires grad": lambda: torch.zeros(2, requires_grad=True).numpy(),
    "Boolean value of Tensor with more than one value is ambiguous": lambda: bool(torch.zeros(2)),
    "only one element tensors can be converted to Python scalars": lambda: float(torch.zeros(2)),
    "cannot be converted to Scalar": lambda: torch.zeros(2).item(),
    "is invalid for input of size": lambda: torch.zeros(5).view(2, 2),
    "Dimension out of range": lambda: torch.zeros(5).sum(dim=1),
    "could not infer output dtype": lambda: torch.tensor([1, 2]).mean(),
    "can't be cast to the desired output type": lambda: torch.tensor([1, 2]).mul_(0.5),
    "stack expects each tensor to be equal size": lambda: torch.stack([torch.zeros(2), torch.zeros(3)]),
    "stack expects a non-empty TensorList": lambda: torch.stack([]),
    "1D tensors expected": lambda: torch.dot(torch.zeros(2, 2), torch.zeros(2)),
    "attempting to assign a gradient": lambda: setattr(torch.nn.Parameter(torch.zeros(3)), "grad", torch.zeros(2)),
    "returned an incorrect number of gradients": lambda: _function_backward(lambda dy: (dy, dy)),
    "returned an invalid gradient": lambda: _function_backward(lambda dy: dy.sum()),
    "save_for_backward can only save variables": lambda: _function_backward(lambda dy: dy, save=2.0),
    "you can only change requires_grad flags of leaf variables":
        lambda: (torch.ones(2, requires_grad=True) * 2).requires_grad_(False),
    "only Tensors of floating point dtype can require gradients": lambda: torch.tensor([1, 2]).requires_grad_(),
}


def _saved_in_place():
    s = torch.sigmoid(torch.ones(2, requires_grad=True))
    s.mul_(2)
    s.sum().backward()


def _no_gpu():
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: .cuda() does not raise")
    torch.zeros(1).cuda()


def _function_backward(backward, save=None):
    class F(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if save is not None:
                ctx.save_for_backward(save)
            return x * 2

        @staticmethod
        def backward(ctx, dy):
            return backward(dy)

    F.apply(torch.ones(3, requires_grad=True)).sum().backward()


def test_the_error_texts_diagnoses_look_for_are_this_torchs():
    """Every PyTorch message a diagnosis matches is the one the installed torch raises (make test-latest and make
    test-oldest run this against the newest and the oldest torch the wheel allows)."""
    from gradlab.practice.judging.exception_advice import ERRORS

    patterns = {p for p, _ in ERRORS} | {p for e in all_exercises().values() for p, _ in checks_of(e).errors}
    assert patterns <= set(RAISES), f"no line raises {patterns - set(RAISES)}: add one to RAISES"
    for pattern in patterns:
        with pytest.raises((RuntimeError, IndexError, ValueError, TypeError, AssertionError)) as raised:
            RAISES[pattern]()
        assert pattern in str(raised.value), (pattern, str(raised.value))


def test_one_constant_factor_on_every_input_is_called_one_factor():
    """The same 1.5 × on every input is one factor, not "a different multiple on each input (1.5 to 1.5 ×)"."""
    def softmax_grad(W, b, x, y):
        d = (torch.softmax(x @ W + b, dim=1) - y) / x.shape[0]
        return 1.5 * (x.T @ d), 1.5 * d.sum(0)

    text = said(judged("mnist.softmax_grad", softmax_grad))
    assert "∂cost/∂W = 1.5 × the expected on all 7 inputs it differs on: a constant factor" in text, text
    assert "different multiple" not in text and "1.5 to 1.5" not in text, text


# corpus files whose diagnosis chose its words by a set's order (a str's hash, which PYTHONHASHSEED sets): which of two
# swapped outputs is said first, which input's float32 NaN pattern is named, "by at most" the first input's error
_HASHED = ["gaussian-policy.score/wrong_swapped_outputs.py", "log1pexp.Log1pExp/wrong_where_guard_backward.py",
           "jacobian.jacobian_loop/wrong_float32_buffer.py", "ddp.average_gradients/wrong_float32_bucket.py"]


def test_a_diagnosis_is_the_same_under_every_pythonhashseed():
    """The standard's "CPU runs repeat bit for bit": a diagnosis is words chosen in the outputs' and inputs' own order,
    never a set's; the same corpus files judged (in-process, tests/inprocess.py) under PYTHONHASHSEED 0 to 3, one
    subprocess each, all at once, say the same."""
    tests = Path(__file__).resolve().parent
    code = ("import json, sys; from inprocess import judged_file\n"
            f"print(json.dumps([judged_file({str(tests / 'practice_corpus')!r} + '/' + f, f.split('/')[0])"
            f".metrics.get('diagnosis') for f in {_HASHED!r}]))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests.parent), str(tests)])}
    procs = [subprocess.Popen([sys.executable, "-c", code], env={**env, "PYTHONHASHSEED": str(seed)}, cwd=tests,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for seed in range(4)]
    said = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in said]
    texts = [json.loads(out) for out, _ in said]
    assert all(all(texts[0]) and t == texts[0] for t in texts), [
        (f, [t[k] for t in texts]) for k, f in enumerate(_HASHED) if len({t[k] for t in texts}) > 1]


@pytest.mark.parametrize("name, phrases", [
    ("actor-critic.critic_update/wrong_zero_grad_after_set.py",
     ["the gradient optimizer.step() was given at the first update is 0 everywhere on every input; the parameters "
      "after the first update did not move (the update is 0) on every input"]),
    ("mnist.softmax_grad/wrong_naive_softmax.py", ["∂cost/∂W is NaN at 5488 of 7840 entries", "∂cost/∂b is NaN at 7 "
                                                   "of 10 entries"]),
    ("jacobian.jacobian_loop/wrong_float32_buffer.py", ["differs by at most 2.8e-08 relative"])])
def test_one_relation_of_several_outputs_is_said_in_each_outputs_own_words(name, phrases):
    """One relation (0, NaN) said of several outputs: an update of 0 "did not move", an output of 0 "is 0 everywhere",
    NaN at each output's own count of its own entries; "by at most" the largest over every input said (2.8e-08 on
    '6 outputs, 2 inputs'), not one input's picked by a set's order (1.4e-08 to 2.8e-08 on the five)."""
    r = judged_file(str(Path(__file__).parent / "practice_corpus" / name), name.split("/")[0])
    assert all(p in r.metrics["diagnosis"] for p in phrases), r.metrics["diagnosis"]
