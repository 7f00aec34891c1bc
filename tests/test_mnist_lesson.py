"""The mnist lesson: the hand-derived gradient, the three step functions, the training loop and its claims."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from gradlab.errors import GradlabError
from gradlab.kit import training as T
from gradlab.lessons.mnist import lesson as M

SMALL = {"epochs": 2, "train_size": 2000, "test_size": 500}


@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 40), features=st.integers(1, 30), classes=st.integers(2, 12), seed=st.integers(0, 10**6))
def test_analytic_gradient_matches_autograd_float64(batch, features, classes, seed):
    """∂cost/∂W = xᵀ(p − y)/B and ∂cost/∂b = mean(p − y), for any shapes and weights."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, features, generator=g, dtype=torch.float64)
    y = F.one_hot(torch.randint(0, classes, (batch,), generator=g), classes).double()
    W = torch.randn(features, classes, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn(classes, generator=g, dtype=torch.float64, requires_grad=True)
    auto = torch.autograd.grad(M.cross_entropy(x @ W + b, y), [W, b])
    cost, gW, gb = M.analytic_gradients(x, y, W.detach(), b.detach())
    assert torch.allclose(gW, auto[0], rtol=1e-10, atol=1e-12)
    assert torch.allclose(gb, auto[1], rtol=1e-10, atol=1e-12)
    assert math.isclose(float(cost), float(M.cross_entropy(x @ W + b, y).detach()), rel_tol=1e-12)


def test_cost_is_the_tutorials_formula():
    z = torch.tensor([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]], dtype=torch.float64)
    y = torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], dtype=torch.float64)
    tutorial = torch.mean(-torch.sum(y * torch.log(torch.softmax(z, 1)), 1))  # mean(-sum(y * log(pred), 1))
    assert float(M.cross_entropy(z, y)) == pytest.approx(float(tutorial), rel=1e-14)


def test_three_step_functions_agree_step_by_step(sample):
    x, y = sample.x_train[:3000], F.one_hot(sample.y_train[:3000], 10).float()
    W0, b0 = torch.zeros(784, 10), torch.zeros(10)
    steppers = {name: make(W0, b0, 0.05) for name, make in M.STEP_MAKERS.items()}
    for s in range(30):
        xb, yb = x[s * 100:(s + 1) * 100], y[s * 100:(s + 1) * 100]
        costs = {name: float(step(xb, yb)) for name, (step, _) in steppers.items()}
        ref = steppers["optimizer"][1]
        for name in ("manual", "analytic"):
            assert M.max_abs_diff(steppers[name][1], ref) <= 1e-6, (name, s)
            assert costs[name] == pytest.approx(costs["optimizer"], abs=1e-6)
    assert float(steppers["optimizer"][1][0].detach().abs().max()) > 0.01  # the weights really moved


def test_compare_run_holds_every_claim(sample):
    result = M.run(M.Config(**SMALL), sample)
    assert [c.id for c in result.claims] == ["manual-equals-optimizer", "analytic-equals-autograd",
                                             "analytic-gradient-one-batch", "one-step-agrees"]
    assert all(c.passed for c in result.claims) and result.exit_code == 0
    for v in M.VARIANTS:
        m = result.metrics[v]
        assert len(m["epoch_cost"]) == 2 and m["epoch_cost"][1] < m["epoch_cost"][0] < math.log(10)
        assert 0.6 < m["test_accuracy"] <= 1 and m["samples_per_s"] > 0
    assert result.data["train"] == 2000 and result.data["test"] == 500


def test_first_epoch_cost_starts_at_log10(sample):
    """With W = b = 0, every class has p = 1/10, so the very first batch cost is ln 10."""
    step, _ = M.optimizer_step(torch.zeros(784, 10), torch.zeros(10), 0.01)
    x, y = sample.x_train[:100], F.one_hot(sample.y_train[:100], 10).float()
    assert float(step(x, y)) == pytest.approx(math.log(10), rel=1e-6)


def test_a_wrong_manual_step_fails_its_claim(sample, monkeypatch):
    """The claim can fail: a manual step with a 1% larger learning rate is caught."""
    original = M.STEP_MAKERS["manual"]
    monkeypatch.setitem(M.STEP_MAKERS, "manual", lambda W0, b0, lr: original(W0, b0, lr * 1.01))
    result = M.run(M.Config(**SMALL), sample)
    claims = {c.id: c for c in result.claims}
    assert not claims["manual-equals-optimizer"].passed and claims["manual-equals-optimizer"].value > 1e-5
    assert not claims["one-step-agrees"].passed
    assert result.exit_code == 1


def test_single_variants_train_only_themselves(sample):
    for v in M.VARIANTS:
        result = M.run(M.Config(variant=v, **SMALL), sample)
        assert list(result.metrics) == [v]
        assert [c.id for c in result.claims] == ["analytic-gradient-one-batch", "one-step-agrees"]
        assert result.exit_code == 0


def test_same_seed_same_numbers_other_seed_other_order(sample):
    a = M.run(M.Config(**SMALL, seed=3), sample)
    b = M.run(M.Config(**SMALL, seed=3), sample)
    c = M.run(M.Config(**SMALL, seed=4), sample)
    for v in M.VARIANTS:
        assert a.metrics[v]["epoch_cost"] == b.metrics[v]["epoch_cost"]
        assert a.metrics[v]["epoch_cost"] != c.metrics[v]["epoch_cost"]


def test_batch_orders():
    orders = T.batch_orders(50, 3, True, seed=1)
    assert all(sorted(o.tolist()) == list(range(50)) for o in orders)
    assert orders[0].tolist() != orders[1].tolist()
    assert T.batch_orders(50, 3, True, 1)[2].tolist() == orders[2].tolist()
    assert T.batch_orders(50, 2, False, 1) == [None, None]


def test_no_shuffle_takes_batches_in_file_order(sample):
    x, y = sample.x_train[:300], F.one_hot(sample.y_train[:300], 10).float()
    seen = []

    def step(xb, yb):
        seen.append(xb)
        return torch.tensor(1.0)

    costs, bad = M.train(M.epoch_runner(step, (), x, y, 100), [None])
    assert costs == [1.0] and bad is None
    assert all(torch.equal(s, x[i * 100:(i + 1) * 100]) for i, s in enumerate(seen))


def test_batches_gathered_from_the_bytes_are_the_very_floats(sample):
    """The CPU loop gathers shuffled batches from the images' bytes (as_bytes) and divides each by 255: every one of
    the 256 values comes back as the float x holds, so the steps see the same batches in both ways; pixels that are
    not k/255 keep the float path."""
    every = torch.arange(256, dtype=torch.uint8).repeat(3, 1)
    assert torch.equal(M.as_bytes(every.to(torch.float32).div_(255.0)), every)
    assert M.as_bytes(torch.full((2, 3), 0.5)) is None and M.as_bytes(torch.full((2, 3), -1 / 255)) is None
    x, y = sample.x_train[:300], F.one_hot(sample.y_train[:300], 10).float()
    order = torch.randperm(300, generator=torch.Generator().manual_seed(0))
    runs = []
    for stored in (None, M.as_bytes(x)):
        runs.append([])
        M.epoch_runner(lambda xb, yb: runs[-1].append((xb, yb)) or torch.tensor(0.0), (), x, y, 100, stored)(order)
    assert len(runs[1]) == 3 and all(torch.equal(a, c) and torch.equal(b, d)
                                     for (a, b), (c, d) in zip(*runs, strict=True))
    assert runs[0][0][0].dtype == runs[1][0][0].dtype == torch.float32


def test_divergence_stops_with_epoch_and_step(sample):
    result = M.run(M.Config(lr=1e38, **SMALL), sample)
    assert result.stopped and "epoch 1, step 2 of 20" in result.stopped and "try a smaller one (lr)" in result.stopped
    assert result.exit_code == 1
    assert math.isnan(result.metrics["optimizer"]["test_accuracy"])


@pytest.mark.parametrize(("field", "value", "message"), [
    ("lr", 0.0, "--lr must be a positive finite number"),
    ("lr", -1.0, "--lr must be a positive finite number"),
    ("lr", float("nan"), "--lr must be a positive finite number"),
    ("lr", float("inf"), "--lr must be a positive finite number"),
    ("epochs", 0, "--epochs must be at least 1"),
    ("batch_size", 0, "--batch-size must be at least 1"),
    ("train_size", 0, "--train-size must be at least 1"),
    ("test_size", -5, "--test-size must be at least 1"),
    ("variant", "adam", "unknown variant 'adam'"),
])
def test_config_rejects_bad_values(field, value, message):
    with pytest.raises(GradlabError, match=message):
        M.Config(**{field: value})


def test_batch_larger_than_training_set(sample):
    with pytest.raises(GradlabError, match="--batch-size 500 is larger than the training set"):
        M.run(M.Config(batch_size=500, train_size=400), sample)


def test_train_size_larger_than_the_data_uses_all_with_a_note_when_chosen(sample):
    result = M.run(M.Config(epochs=1, train_size=20000, test_size=3000), sample)
    assert result.data["train"] == 10_000
    assert any("using all 10,000" in n for n in result.notes)
    result = M.run(M.Config(epochs=1, test_size=3000), sample)  # the tutorial's default 55,000: no note
    assert result.data["train"] == 10_000 and not result.notes


def test_tutorial_column_only_for_full_mnist_with_tutorial_settings(sample):
    config = M.Config()
    assert "tutorial (TF-1)" in M.tables({v: {"epoch_cost": [1.0] * 10, "test_accuracy": 0.9, "wall_s": 1.0,
                                              "samples_per_s": 1.0} for v in M.VARIANTS},
                                         list(M.VARIANTS), config, "mnist")[0].headers
    assert "tutorial (TF-1)" not in M.tables({"optimizer": {"epoch_cost": [1.0] * 10, "test_accuracy": 0.9,
                                                            "wall_s": 1.0, "samples_per_s": 1.0}},
                                             ["optimizer"], config, "mnist-sample")[0].headers


def test_the_forgotten_slash_b_diagnosis_says_exactly_what_is_wrong():
    """The mistake computes xᵀ(p − y) and mean(p − y): ∂W is B times too large, ∂b is right, as its diagnosis says."""
    from gradlab.lessons.mnist.exercises.checks import GRAD

    mistake = next(m for m in GRAD.mistakes if m.name == "∂W's /B forgotten")
    for case in GRAD.cases(0):
        got, ref = GRAD.call(mistake.fn, case), GRAD.call(GRAD.reference, case)
        assert torch.allclose(got["gb"], ref["gb"], rtol=1e-5, atol=1e-7)
        assert torch.allclose(got["gW"], len(case["x"]) * ref["gW"], rtol=1e-4, atol=1e-5)
    said = mistake.diagnosis
    assert "∂cost/∂W is B times too large" in said and "∂cost/∂b, a mean over the batch, is right" in said


@pytest.mark.parametrize("shuffle", [True, False])
def test_a_graphed_epoch_trains_as_the_eager_loop(sample, monkeypatch, shuffle):
    """training.graphed_epoch's bookkeeping on the CPU, with CUDA's capture replaced by "run the epoch again": the
    warm-up's changes are undone, each epoch takes its own order and the costs land in place, bit for bit as the
    eager loop (the CUDA graph itself is checked by tests/test_gpu.py where there is a GPU)."""
    monkeypatch.setattr(T, "capture", lambda fn, warm_up: (warm_up(), fn)[1])
    x, y = sample.x_train[:500], F.one_hot(sample.y_train[:500], 10).float()
    orders = T.batch_orders(500, 3, shuffle, seed=2)
    W0, b0 = torch.zeros(784, 10), torch.zeros(10)
    runs = {}
    for how in ("eager", "graphed"):
        for name in M.VARIANTS:
            step, p = M.STEP_MAKERS[name](W0, b0, 0.1)
            t = M.targets(name, y, y.argmax(dim=1))
            run_epoch = T.eager_epoch(step, x, t, 100) if how == "eager" else T.graphed_epoch(step, p, x, t, 100)
            runs[how, name] = M.train(run_epoch, orders)[0], [q.detach().clone() for q in p]
    for name in M.VARIANTS:
        (costs_e, p_e), (costs_g, p_g) = runs["eager", name], runs["graphed", name]
        assert costs_e == costs_g and all(torch.equal(a, b) for a, b in zip(p_e, p_g, strict=True)), name
