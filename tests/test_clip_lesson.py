"""The clip lesson: the clipping formulas, the three-step path, the bounds, the CLI."""

import json
import math

import pytest
import torch
from conftest import assert_one_line_error, invoke
from hypothesis import given, settings
from hypothesis import strategies as st

from gradlab.errors import GradlabError
from gradlab.lessons.clip import lesson as C

SMALL = {"epochs": 1, "train_size": 2000, "test_size": 500}


def gradient_lists():
    shapes = st.lists(st.lists(st.integers(1, 6), min_size=1, max_size=3), min_size=1, max_size=4)
    return st.tuples(shapes, st.integers(0, 10**6), st.floats(1e-3, 1e3))


@settings(max_examples=50, deadline=None)
@given(gradient_lists(), st.floats(0.01, 100))
def test_global_norm_clipping_matches_torch(spec, clip_norm):
    shapes, seed, magnitude = spec
    g = torch.Generator().manual_seed(seed)
    grads = [torch.randn(*s, generator=g, dtype=torch.float64) * magnitude for s in shapes]
    norm = C.global_norm(grads)
    assert float(norm) == pytest.approx(math.sqrt(sum(float((t ** 2).sum()) for t in grads)), rel=1e-12)
    theirs_norm, theirs = C.torch_clip(grads, clip_norm)
    assert float((norm - theirs_norm).abs() / norm) <= 1e-7
    ours = C.clip_by_global_norm(grads, clip_norm)
    assert float(C.global_norm(ours)) <= clip_norm * (1 + 1e-12)
    scale = float(C.global_norm(ours))
    worst = max(float((o - t).abs().max()) for o, t in zip(ours, theirs, strict=True))
    assert worst / scale <= 1e-6 / clip_norm + 1e-12
    if float(norm) <= clip_norm:  # below the cap nothing changes
        assert all(torch.equal(o, t) for o, t in zip(ours, grads, strict=True))
    else:  # above it the direction is kept
        ratio = [o / t for o, t in zip(ours, grads, strict=True)]
        assert all(torch.allclose(r, ratio[0].flatten()[0].expand_as(r)) for r in ratio)
    assert all(t.data_ptr() != o.data_ptr() for t, o in zip(grads, ours, strict=True))  # no mutation


@given(st.floats(0.01, 10), st.integers(0, 1000))
def test_clip_by_norm_and_value_bounds(cap, seed):
    g = torch.Generator().manual_seed(seed)
    grads = [torch.randn(5, 3, generator=g, dtype=torch.float64) * 10, torch.randn(7, generator=g, dtype=torch.float64)]
    assert all(float(t.norm()) <= cap * (1 + 1e-12) for t in C.clip_by_norm(grads, cap))
    assert all(float(t.abs().max()) <= cap for t in C.clip_by_value(grads, cap))


def test_compare_shows_clipping_rescues_the_exploding_mlp(sample):
    result = C.run(C.Config(epochs=2, train_size=5000, test_size=1000), sample)
    assert all(c.passed for c in result.claims), [(c.id, c.value) for c in result.claims]
    clipped, plain = result.metrics["global-norm"], result.metrics["none"]
    assert plain["norm_max"][0] > 10 * C.Config().clip_norm  # gradients explode without clipping
    assert clipped["test_accuracy"] > 0.7 > 0.4 > plain["test_accuracy"]
    assert 0 < clipped["clipped_fraction"][0] <= 1 and plain["clipped_fraction"] == [0.0, 0.0]


def test_tutorial_setting_reports_the_first_norm_at_zero_init(sample):
    result = C.run(C.Config(model="softmax", lr=0.5, clip_norm=1.0, epochs=1, train_size=3000), sample)
    claims = {c.id: c for c in result.claims}
    assert claims["first-norm-by-hand"].passed and result.metrics["global-norm"]["longest_step"] <= 1 + 1e-5
    first = result.metrics["first_batch_global_norm"]
    assert first["model_init"] == first["softmax_zero_init"]  # the softmax starts at zero
    assert f"{first['model_init']:.6f} at the softmax's initial weights (zero init)" in result.tables[1].note


def test_the_tutorials_plain_command_reports_the_zero_init_norm(tmp_path):
    """gradlab clip --lr 0.5 --clip-norm 1.0 --epochs 3 (default mlp) still reports the tutorial's zero-init norm."""
    out = tmp_path / "r.json"
    result = invoke("clip", "--lr", "0.5", "--clip-norm", "1.0", "--epochs", "3", "--dataset", "mnist-sample",
                    "--offline", "--json", str(out))
    assert result.exit_code == 0, result.output
    first = json.loads(out.read_text())["metrics"]["first_batch_global_norm"]
    assert first["softmax_zero_init"] == pytest.approx(1.5759, abs=1e-3)
    assert "for the tutorial's softmax at zero init" in result.output.replace("\n", " ")


def test_three_step_path_is_bitwise_the_one_step_path(sample):
    x = sample.x_train[:1000]
    y = torch.nn.functional.one_hot(sample.y_train[:1000], 10).float()
    assert C.equivalence_check(C.Config(), x, y, None, torch.device("cpu")) == 0.0


def test_the_longest_step_is_shown_not_claimed_and_measured_on_the_parameters(sample, monkeypatch):
    """A clipped SGD step is at most lr·clip_norm by the formula, so the lesson shows it (a table column, the JSON)
    instead of claiming it; it is measured on the parameters, so a clip 1.5× too long shows 1.5."""
    result = C.run(C.Config(**SMALL), sample)
    assert "step-bounded" not in {c.id for c in result.claims}
    summary = next(t for t in result.tables if t.title == "after training")
    column = summary.headers.index("longest step ÷ lr·clip_norm")
    shown = {row[0]: row[column] for row in summary.rows}
    assert shown["global-norm"] == result.metrics["global-norm"]["longest_step"] <= 1 + 1e-5
    assert shown["none"] > 2
    clip = C.clip_by_global_norm
    monkeypatch.setattr(C, "clip_by_global_norm", lambda grads, clip_norm: [g * 1.5 for g in clip(grads, clip_norm)])
    longer = C.run(C.Config(**SMALL), sample)
    assert longer.metrics["global-norm"]["longest_step"] == pytest.approx(1.5, rel=1e-4)


def test_the_step_bound_is_sgds_only_adam_breaks_it(sample, monkeypatch):
    """Adam divides each coordinate by its own scale after the clip: its first step is about lr per coordinate, so
    ‖Δθ‖ ≈ lr·√(number of parameters), far beyond lr·clip_norm (the lesson's docstring says so)."""
    monkeypatch.setattr(torch.optim, "SGD", torch.optim.Adam)
    result = C.run(C.Config(model="softmax", lr=0.01, compare=False, **SMALL), sample)
    assert result.metrics["global-norm"]["longest_step"] > 10


def test_the_step_bound_is_measured_on_the_parameters_of_every_mode(sample):
    x, y = sample.x_train[:500], torch.nn.functional.one_hot(sample.y_train[:500], 10).float()
    for mode, cap in (("global-norm", 1.0), ("norm", 1.0), ("value", 0.05)):
        config = C.Config(clip=mode, clip_norm=cap, clip_value=cap, lr=2.0, epochs=1, batch_size=50)
        out = C.train(mode, config, x, y, [None], torch.device("cpu"))
        assert 0.99 < out.longest_step <= 1 + 1e-5, (mode, out.longest_step)  # clipping acted: at the cap
    unclipped = C.train("none", C.Config(epochs=1, batch_size=50), x, y, [None], torch.device("cpu"))
    assert unclipped.longest_step > 2  # the same batches, unclipped: steps far past lr·clip_norm


@pytest.mark.parametrize("mode", ["norm", "value", "none"])
def test_other_modes(sample, mode):
    result = C.run(C.Config(clip=mode, compare=False, **SMALL), sample)
    assert list(k for k in result.metrics if k != "first_batch_global_norm") == [mode]
    assert result.exit_code == 0, [(c.id, c.value, c.bound) for c in result.claims]


def test_divergence_is_a_result_not_a_crash(sample):
    result = C.run(C.Config(clip="none", compare=False, lr=1e6, **SMALL), sample)
    diverged = result.metrics["none"]["diverged"]  # a NaN cost, or a blown-up one (> 1e6) first
    assert diverged.startswith("cost ") and "at epoch 1, step" in diverged
    assert float(diverged.split()[1]) > C.DIVERGED or diverged.startswith("cost nan")
    assert math.isnan(result.metrics["none"]["test_accuracy"])
    assert any("none diverged" in n for n in result.notes)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("clip_norm", 0.0, "--clip-norm must be a positive finite number"),
    ("clip_norm", -1.0, "--clip-norm must be a positive finite number"),
    ("clip_value", float("nan"), "--clip-value must be a positive finite number"),
    ("clip", "tanh", "unknown --clip mode 'tanh'"),
    ("model", "resnet", "unknown --model 'resnet'"),
    ("epochs", 0, "--epochs must be at least 1"),
])
def test_bad_config(field, value, message):
    with pytest.raises(GradlabError, match=message):
        C.Config(**{field: value})


def test_cli_compare_json_plot_and_determinism(tmp_path):
    args = ["clip", "--dataset", "mnist-sample", "--epochs", "1", "--train-size", "2000", "--test-size", "500"]
    runs = []
    for i in range(2):
        out = tmp_path / f"{i}.json"
        result = invoke(*args, "--json", str(out), "--plot", str(tmp_path / "p.png"))
        assert result.exit_code == 0, result.output
        r = json.loads(out.read_text())
        for m in ("global-norm", "none"):
            r["metrics"][m].pop("wall_s")
        r.pop("tables")
        runs.append(r)
    assert runs[0] == runs[1]
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    assert "steps clipped" in result.output and "global norm of the very first batch" in result.output


@pytest.mark.parametrize(("args", "fragment"), [
    (["--clip-norm", "0"], "--clip-norm must be a positive finite number, got 0.0"),
    (["--clip-norm", "-2"], "--clip-norm must be a positive finite number"),
    (["--clip", "tanh"], "'tanh' is not one of"),
    (["--lr", "inf"], "--lr must be a positive finite number"),
])
def test_cli_bad_inputs(args, fragment):
    assert_one_line_error(invoke("clip", "--dataset", "mnist-sample", *args), fragment)


def test_tutorial_preset_runs(tmp_path):
    out = tmp_path / "r.json"
    result = invoke("clip", "--config", "configs/clip-tutorial.toml", "--dataset", "mnist-sample", "--epochs", "1",
                    "--json", str(out))
    assert result.exit_code == 0, result.output
    r = json.loads(out.read_text())
    assert r["config"]["model"] == "softmax" and r["config"]["lr"] == 0.5
    assert r["metrics"]["first_batch_global_norm"]["model_init"] == pytest.approx(1.5759, abs=1e-3)
