"""The exercises of `gradlab dqn`, on gradlab's side: each one's reference answer, its known mistakes (a realistic wrong
implementation and what to tell its author) and what its checks claim. Never imported beside a submission."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from gradlab.lessons.dqn.exercises.harness import HARNESSES
from gradlab.practice.exercise import Checks, Mistake
from gradlab.training import global_norm

# ------------------------------------------------------------------------------------------------------- td_loss

def _td_target(target, r, s2, done, gamma):
    return r + gamma * (1 - done) * target(s2).max(dim=1).values


def _td_reference(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = _td_target(target, r, s2, done, gamma)
    q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
    return F.smooth_l1_loss(q, y)


def _td_no_stop(online, target, s, a, r, s2, done, gamma):
    y = _td_target(target, r, s2, done, gamma)
    y.detach()  # the result is thrown away: y is still in the graph
    return F.smooth_l1_loss(online(s).gather(1, a.unsqueeze(1)).squeeze(1), y)


def _td_no_done(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = r + gamma * target(s2).max(dim=1).values
    return F.smooth_l1_loss(online(s).gather(1, a.unsqueeze(1)).squeeze(1), y)


def _td_online_target(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = _td_target(online, r, s2, done, gamma)
    return F.smooth_l1_loss(online(s).gather(1, a.unsqueeze(1)).squeeze(1), y)


def _td_extra(outs: list[dict], cases: list[dict]) -> list[tuple[str, float, float, str]]:
    leak = max(float(global_norm(o["target"])) for o in outs)
    return [("no gradient reaches the target network (largest norm of its gradient)", leak, 0.0, "<=")]


TD = Checks(
    harness=HARNESSES["td_loss"], reference=_td_reference,
    mistakes=[
        Mistake("no stop-gradient", _td_no_stop, lambda s, r: "gradient reaches the target network: y must be a "
                "number to move towards. Compute it under torch.no_grad(), or write y = y.detach() (y.detach() alone "
                "returns a new tensor and leaves y in the graph)"),
        Mistake("done ignored", _td_no_done, lambda s, r: "terminal transitions bootstrap from the next state: "
                "multiply γ · max target(s2) by (1 − done): after a termination there is no next state to value"),
        Mistake("online target", _td_online_target, lambda s, r: "the target comes from the online network: use the "
                "target network, target(s2), which is what stabilises DQN"),
    ],
    claims={"td": ("your loss and its gradients ≡ the stop-gradient TD loss's (max relative |Δ|)", 1e-5)},
    extra=_td_extra)


CHECKS: dict[str, Checks] = {
    "td_loss": TD,
}
