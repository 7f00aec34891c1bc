"""`gradlab step`: the backward pass node by node, in autograd's order, stopping where the NaN is born."""

import io
import re

import pytest
import torch
from conftest import invoke
from rich.console import Console

from gradlab.lessons import LESSONS
from gradlab.report import step
from gradlab.report.console import make_console


def test_log1pexp_piped_shows_the_nan_being_born():
    result = invoke("step", "log1pexp")
    assert result.exit_code == 0, result.output
    naive = result.output.split("torch.where guard")[0]
    names = re.findall(r"step \d+/\d+\s+(\w+)", naive)
    assert names == ["LogBackward0", "AddBackward0", "ExpBackward0"]  # the order autograd ran them
    assert "arrives  ∇ = 0  from AddBackward0" in naive and "exp(x); here the local derivative is inf" in naive
    assert "first non-finite gradient is born here: ∇ 0 × local inf = nan" in naive
    assert "✓ the gradients shown arriving at each leaf add up to its .grad" in result.output


def test_mnist_walk_ends_at_the_analytic_gradient():
    """The numbers the walk shows arriving at W and b are xᵀ(p − y)/B and mean(p − y), the lesson's formulas."""
    from gradlab.lessons.mnist.lesson import analytic_gradients

    (graph,) = LESSONS["mnist"].load().graphs(LESSONS["mnist"].config())
    leaf = {n.label: n for n in graph.nodes if n.leaf}
    W, b = graph.variables[leaf["W"].id].detach(), graph.variables[leaf["b"].id].detach()
    addmm = next(n for n in graph.nodes if n.name == "AddmmBackward0")
    x = addmm.forward.inputs[1]  # addmm(b, x, W)
    labels = graph.nodes[0].grads_out[0].argmin(dim=1)  # NllLoss sends −1/B at each row's label, 0 elsewhere
    _, gW, gb = analytic_gradients(x, torch.nn.functional.one_hot(labels, 2).float(), W, b)
    assert torch.allclose(graph.leaf_grads[leaf["W"].id], gW, atol=1e-7)
    assert torch.allclose(graph.leaf_grads[leaf["b"].id], gb, atol=1e-7)
    out = invoke("step", "mnist").output
    assert "W (AccumulateGrad): .grad = [" in out  # 6 numbers: shown in full


def test_the_walk_claim_can_fail(monkeypatch):
    """A walk whose shown gradients do not add up to .grad fails its claim (exit 1)."""
    real = step.check_walk

    def tampered(graphs):
        leaf = next(iter(graphs[0].leaf_grads))
        src = graphs[0].incoming(graphs[0].nodes[leaf])[0]
        graphs[0].nodes[src.src].grads_out[src.slot] = graphs[0].nodes[src.src].grads_out[src.slot] + 1
        return real(graphs)

    monkeypatch.setattr(step, "check_walk", tampered)
    result = invoke("step", "mnist")
    assert result.exit_code == 1 and "✗ the gradients shown" in result.output


def test_predict_scores_the_guesses(capsys):
    (graph, *_) = LESSONS["log1pexp"].load().graphs(LESSONS["log1pexp"].config())
    answers = iter(["0", "0", "1"])  # Log sends 0 (right), Add sends 0 (right), Exp sends nan (1 is wrong)
    asked = []
    score = step.Score()
    step.walk(graph, make_console(quiet=False, stderr=False), prompt=lambda text: asked.append(text) or next(answers),
              predict=True, score=score)
    assert (score.asked, score.right) == (3, 2) and "autograd sent nan" in score.misses[0]
    assert asked[0].startswith("  your guess: what does") and "✗ autograd sent nan" in capsys.readouterr().out


def test_on_a_terminal_the_walk_waits_for_enter_after_each_node(monkeypatch):
    from gradlab.cli import step as command

    prompts = []
    monkeypatch.setattr(command.click, "prompt", lambda text, **how: prompts.append((text, how)) or "")
    monkeypatch.setattr(command.sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(command.sys.stdout, "isatty", lambda: True)
    assert command.step.callback("log1pexp", predict=False, seed=0) == 0
    assert prompts and prompts[0] == (step.NEXT, {"default": "", "show_default": False, "prompt_suffix": ""})


def _walk_typing(lesson, typed, predict=False):
    """Walk LESSON's graphs as on a terminal, typing TYPED at the prompts (then Enter); what was printed, by prompt."""
    graphs = LESSONS[lesson].load().graphs(LESSONS[lesson].config(), **LESSONS[lesson].step_inputs)
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, color_system=None)
    seen, answers = [], iter(typed)

    def prompt(text):
        seen.append(buffer.getvalue())
        return next(answers, "")

    score, keys = step.Score(), step.Keys()
    for g in graphs:
        if not keys.quit:
            step.walk(g, console, prompt=prompt, predict=predict, score=score, keys=keys)
    return buffer.getvalue(), seen


def test_q_quits_the_walk():
    out, seen = _walk_typing("dqn", ["q"])
    assert len(seen) == 1 and out.count("step ") == 1  # one node shown, then nothing more: not 77 Enter presses


def test_s_skips_to_the_lessons_point_and_says_it():
    """log1pexp: s at the first node runs on to where the NaN is born, which says it is the point; dqn: the point
    is the cut, said with its source line, and, without a cut, where gradient reaches the target network."""
    out, seen = _walk_typing("log1pexp", ["s"])
    naive = out.split("torch.where guard")[0]
    assert re.findall(r"step (\d)/3", naive) == ["1", "3"] and seen[1].count("step 3/3") == 1
    assert re.search(r"step 3/3  ExpBackward0 .*\n  ★ the lesson's point is here", naive)
    out, _ = _walk_typing("dqn", [])
    stop_grad = out.split("dqn, placeholder")[0]
    assert "look at: the ✂ cut (detach)" in stop_grad and "★ the lesson's point is here" in stop_grad
    assert "✂ a constant feeds in here (detach: lesson.py" in stop_grad and "y = y.detach()" in stop_grad
    assert re.search(r"✗ gradient reaches target\.\S+: ★ the lesson's point is here", out)


def test_predict_asks_before_it_shows_the_local_derivative():
    _, seen = _walk_typing("log1pexp", ["0", "0", "nan"], predict=True)
    assert "step 3/3  ExpBackward0" in seen[2] and "local derivative is inf" not in seen[2]



@pytest.mark.parametrize("lesson", ["jacobian", "dqn", "actor-critic", "gaussian-policy", "clip", "ddp"])
def test_every_lesson_steps(lesson):
    result = invoke("step", lesson)
    assert result.exit_code == 0 and "step 1/" in result.output, result.output


def test_unknown_lesson_is_one_line():
    result = invoke("step", "nope")
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1


def test_the_docs_step_block_matches_what_step_prints():
    """The docs' `gradlab step` example (docs/lessons/backward-pass.md) is generated; it fails here when it drifts
    (numbers masked)."""
    import importlib.util

    from conftest import REPO

    spec = importlib.util.spec_from_file_location("readme", REPO / "scripts" / "readme.py")
    readme = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(readme)
    from test_readme import words

    (block,) = [m for _, m in readme.all_blocks() if m["cmd"].startswith("gradlab step ")]
    assert words(readme.run(block["cmd"])) == words(block["out"]), "run `make docs`"
