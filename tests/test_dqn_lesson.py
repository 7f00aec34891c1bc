"""The dqn lesson: gradient anatomy, bitwise equality of placeholder and stop-grad, smoke runs, bad inputs."""

import json
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_one_line_error, invoke

from gradlab.errors import GradlabError
from gradlab.lessons.dqn import lesson as D

TINY = D.Config(hidden=8, total_steps=400, learning_starts=100, train_every=4, gradient_steps=2, batch_size=16,
                buffer_size=1000, eval_episodes=2, windows=2)


def test_anatomy_on_a_tiny_network():
    grads = D.anatomy(TINY)
    stop, place = grads["stop-grad"], grads["placeholder"]
    assert torch.equal(stop.online, place.online)  # bitwise
    assert float(stop.target.norm()) == 0.0 and float(place.target.norm()) == 0.0
    assert float(grads["no-stop-grad"].target.norm()) > 0  # the loss reaches the target network
    assert torch.equal(grads["no-stop-grad"].online, stop.online)  # ... but not the online gradient
    residual = grads[D.RESIDUAL].online
    semi = grads["stop-grad, no target net"].online
    assert float((residual - semi).abs().max()) > 1e-4  # the residual gradient is a different rule
    assert all(g.by_hand <= D.BY_HAND for g in grads.values())  # every variant = its chain rule written out


def wrong_td_loss(how: str):
    """td_loss with one realistic mistake, for the anatomy to catch."""
    def td_loss(online, target_net, data, gamma, mode):
        q = online(data.obs).gather(1, data.actions[:, None]).squeeze(1)
        bootstrap = target_net(data.next_obs).max(dim=1).values
        y = data.rewards + gamma * bootstrap * (1 if how == "no (1 - done)" else 1 - data.dones)
        if mode != "no-stop-grad":
            y = y.detach()
        if how == "squared":
            return F.mse_loss(q, y)
        return F.smooth_l1_loss(q, y * (2 if how == "target doubled" else 1))
    return td_loss


@pytest.mark.parametrize("how", ["no (1 - done)", "squared", "target doubled"])
def test_the_by_hand_claims_catch_a_wrong_loss(monkeypatch, how):
    """The anatomy's "by hand" claims compare autograd with the formula, not with itself: a loss that drops
    (1 − done), squares instead of Huber, or scales the target, misses it."""
    batch = D.anatomy_batch(D.Config())
    assert 0 < float(batch.dones.sum()) < len(batch.dones)  # the fixed batch has terminal and non-terminal transitions
    monkeypatch.setattr(D, "td_loss", wrong_td_loss(how))
    grads = D.anatomy(D.Config())
    assert grads["no-stop-grad"].by_hand > 1e-3 and grads[D.RESIDUAL].by_hand > 1e-3


def test_td_loss_modes_agree_in_value_and_differ_in_graph():
    batch = D.anatomy_batch(TINY, n=32)
    online = D.q_network(4, 2, 8)
    values = {m: D.td_loss(online, online, batch, 0.9, m) for m in D.TARGET_MODES}
    v = {m: float(t.detach()) for m, t in values.items()}
    assert v["stop-grad"] == v["placeholder"] == v["no-stop-grad"]
    g = {m: torch.autograd.grad(v, list(online.parameters())) for m, v in values.items()}
    assert all(torch.equal(a, b) for a, b in zip(g["stop-grad"], g["placeholder"], strict=True))
    assert any(not torch.equal(a, b) for a, b in zip(g["stop-grad"], g["no-stop-grad"], strict=True))


def test_placeholder_and_stop_grad_train_bit_for_bit():
    a = D.train(replace(TINY, target="placeholder"))
    b = D.train(replace(TINY, target="stop-grad"))
    assert a.episodes == b.episodes and len(a.episodes) > 5
    assert all(torch.equal(p, q) for p, q in zip(a.online.parameters(), b.online.parameters(), strict=True))


def test_no_stop_grad_drags_the_target_network():
    config = replace(TINY, target="no-stop-grad", target_update=10**6)  # never synced: only the loss moves it
    online, target_net, optimizer = D.make_networks(config, 4, 2)
    before = [p.clone() for p in target_net.parameters()]
    loss = D.td_loss(online, target_net, D.anatomy_batch(TINY, n=32), config.gamma, config.target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    assert any(not torch.equal(p, q) for p, q in zip(before, target_net.parameters(), strict=True))


def test_the_two_relative_measures_say_by_their_names_what_they_divide_by():
    """kit.exercise.relative (the checker's) is in units of max(1, |b|); relative_to_largest (the anatomy's, ddp's)
    in units of |b| itself, however small."""
    from gradlab.kit.exercise import difference, relative_to_largest

    a, b = torch.tensor([1e-3]), torch.tensor([2e-3])
    assert relative_to_largest(a, b) == pytest.approx(0.5)
    assert difference({"x": a}, {"x": b}) == pytest.approx(1e-3)
    assert relative_to_largest([a, 2 * a], [b, 2 * b]) == pytest.approx(0.5)  # lists: one scale, B's largest


def test_epsilon_schedule():
    c = D.Config(total_steps=1000, eps_fraction=0.5)
    assert D.epsilon(c, 0) == 1.0 and D.epsilon(c, 250) == pytest.approx(0.52) and D.epsilon(c, 900) == c.eps_end


def test_checkpoint_evaluations_leave_the_training_run_unchanged():
    """Greedy evaluations use their own environment and no random numbers: the run is the same without them."""
    a, b = D.train(replace(TINY, eval_every=50)), D.train(replace(TINY, eval_every=10**6))
    assert len(a.checkpoint.history) == 8 and len(b.checkpoint.history) == 1  # every 50 steps; the end only
    assert a.episodes == b.episodes
    assert all(torch.equal(p, q) for p, q in zip(a.online.parameters(), b.online.parameters(), strict=True))


@pytest.mark.parametrize(("flags", "variant"), [
    (["--stop-grad"], "stop-grad"), (["--placeholder"], "placeholder"), (["--no-stop-grad"], "no-stop-grad"),
    (["--no-target-net"], "stop-grad, no target net"),
    (["--no-stop-grad", "--no-target-net"], D.RESIDUAL),
])
def test_cli_smoke_each_variant(tmp_path, flags, variant):
    out = tmp_path / "r.json"
    result = invoke("dqn", *flags, "--total-steps", "300", "--learning-starts", "100",
                                      "--train-every", "50", "--gradient-steps", "2", "--eval-episodes", "1",
                                      "--json", str(out))
    assert result.exit_code in (0, 1), result.output  # 300 steps cannot reach 195: that claim may fail
    r = json.loads(out.read_text())
    anatomy = {c["id"]: c["passed"] for c in r["claims"] if c["id"].startswith("anatomy")}
    assert all(anatomy.values()) and len(anatomy) == 4
    assert "gradient anatomy" in result.output
    assert [k for k in r["metrics"] if k != "anatomy"] == [variant]


def test_cli_compare_small(tmp_path):
    out = tmp_path / "r.json"
    result = invoke("dqn", "--compare", "--total-steps", "400", "--learning-starts", "100",
                                      "--train-every", "50", "--gradient-steps", "2", "--eval-episodes", "1",
                                      "--json", str(out))
    r = json.loads(out.read_text())
    assert {name for name in r["metrics"] if name != "anatomy"} == {name for name, _, _ in D.COMPARE}
    claims = {c["id"]: c for c in r["claims"]}
    assert claims["training-placeholder-equals-stop-grad"]["passed"]
    assert claims["stop-grad-learns"]["passed"] is (claims["stop-grad-learns"]["value"] >= 195)
    assert result.exit_code == (0 if all(c["passed"] for c in r["claims"]) else 1)


@pytest.mark.parametrize(("args", "fragment"), [
    (["--gamma", "1.5"], "--gamma must be in [0, 1], got 1.5"),
    (["--gamma", "-0.1"], "--gamma must be in [0, 1]"),
    (["--gamma", "nan"], "--gamma must be in [0, 1]"),
    (["--total-steps", "0"], "--total-steps must be between 1 and 100,000,000"),
    (["--lr", "0"], "--lr must be a positive finite number"),
    (["--batch-size", "0"], "--batch-size must be between 1 and 65,536, got 0; try --batch-size 64"),
    (["--batch-size", "64", "--buffer-size", "10"], "larger than --buffer-size"),
])
def test_cli_bad_inputs(args, fragment):
    assert_one_line_error(invoke("dqn", *args), fragment)


def test_unknown_target_mode():
    with pytest.raises(GradlabError, match="unknown target mode"):
        D.Config(target="detach")
