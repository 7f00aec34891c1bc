"""The exercises of `gradlab dqn`, on gradlab's side: each one's reference answer, its known mistakes (a realistic wrong
implementation and what to tell its author) and what the diagnosis measures. Never imported beside a submission."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from gradlab.kit.exercise import Cause, Checks, Mistake, Relation, Suspects
from gradlab.kit.training import global_norm
from gradlab.lessons.dqn.exercises.harness import HARNESSES

TERMINAL = ("*", "family", "terminal:for non-terminal transitions")
SIZE = ("*", "family", "size:for one transition")
FAMILY_HINTS = {
    TERMINAL: "a terminal transition's target is its reward r alone: multiply only the bootstrap γ · max target(s2) "
              "by (1 − done), not r (after a termination there is no next state to value, but the reward was "
              "received)",
    SIZE: "one transition hides a sum where the mean belongs (N times too large), a Q(s, a) of the wrong shape (an "
          "(N, 1) or (N, N) tensor against y of shape (N,) broadcasts to (N, N)) and a Q of another action than a "
          "(max Q(s): that one transition's action is the greedy one): Q(s, a) is one number per transition, the "
          "action taken, online(s).gather(1, a.unsqueeze(1)).squeeze(1)",
}


DONE_ON_R = ("you multiplied the reward by (1 − done) too: (r + γ · max target(s2)) · (1 − done) makes a terminal "
             "transition's target 0. Its target is r alone: only the bootstrap is masked, r + γ · (1 − done) · max "
             "target(s2)")


def _n(case: dict) -> list:
    return [("N", len(case["r"]), "the number of transitions")]


# ------------------------------------------------------------------------------------------------------ td_target

def _y(target, r, s2, done, gamma):
    return r + gamma * (1 - done) * target(s2).max(dim=1).values


def _target_reference(target, r, s2, done, gamma):
    with torch.no_grad():
        return _y(target, r, s2, done, gamma)


def _target_no_done(target, r, s2, done, gamma):
    with torch.no_grad():
        return r + gamma * target(s2).max(dim=1).values


def _target_argmax(target, r, s2, done, gamma):
    with torch.no_grad():
        return r + gamma * (1 - done) * target(s2).max(dim=1)[1]  # the index of the best action, not its value


def _target_batch_max(target, r, s2, done, gamma):
    with torch.no_grad():
        return r + gamma * (1 - done) * target(s2).max(dim=0).values[0]


def _target_done_on_r(target, r, s2, done, gamma):
    with torch.no_grad():
        return (r + gamma * target(s2).max(dim=1).values) * (1 - done)  # the reward masked with the bootstrap


def _target_keepdim(target, r, s2, done, gamma):
    with torch.no_grad():
        return r + gamma * (1 - done) * target(s2).max(dim=1, keepdim=True).values  # (N, 1) against (N,): (N, N)


def _target_extra(outs: list[dict], cases: list[dict]) -> list[float]:
    return [max(float(o["_graph"]) for o in outs)]


TD_TARGET = Checks(
    harness=HARNESSES["td_target"], reference=_target_reference,
    mistakes=[
        Mistake(name="done ignored", fn=_target_no_done,
                diagnosis="terminal transitions bootstrap from the next state: multiply γ · max target(s2) by "
                          "(1 − done): after a termination there is no next state to value"),
        Mistake(name="argmax", fn=_target_argmax,
                diagnosis="you bootstrapped from the index of the best action (.max(1)[1], or argmax), 0 or 1, not "
                          "from its value: use target(s2).max(dim=1).values (or .max(1)[0])"),
        Mistake(name="(1 − done) on r too", fn=_target_done_on_r, diagnosis=DONE_ON_R),
        Mistake(name="max over the batch", fn=_target_batch_max,
                diagnosis="you took the max over the transitions (dim=0), not over the actions of each next state: "
                          "target(s2).max(dim=1).values, one number per transition"),
    ],
    extra=_target_extra,
    rule_hints=["your y carries a graph (to target's parameters): compute it under torch.no_grad(), or return "
                "y.detach(); it is a number to move towards"],
    names={"y": "your target y"},
    quantities=_n,
    relations=[Relation(what="the target with done and 1 − done swapped: only terminal transitions bootstrap",
                        fn=lambda target, r, s2, done, gamma: _target_reference(target, r, s2, 1 - done, gamma),
                        hint="multiply the bootstrap by (1 − done), which is 0 where the episode ended")],
    hints={**FAMILY_HINTS,
           ("y", "shape", "*"): Suspects(causes=(
               Cause(words="the bootstrap max target(s2) kept as (N, 1), against r and done of shape (N,)",
                     fix="target(s2).max(dim=1).values, without keepdim=True", fn=_target_keepdim),))})


# ------------------------------------------------------------------------------------------------------- td_loss

def _q(online, s, a):
    return online(s).gather(1, a.unsqueeze(1)).squeeze(1)


def _td_reference(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = _y(target, r, s2, done, gamma)
    return F.smooth_l1_loss(_q(online, s, a), y)


def _td_no_stop(online, target, s, a, r, s2, done, gamma):
    y = _y(target, r, s2, done, gamma)
    y.detach()  # the result is thrown away: y is still in the graph
    return F.smooth_l1_loss(_q(online, s, a), y)


def _td_no_done(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = r + gamma * target(s2).max(dim=1).values
    return F.smooth_l1_loss(_q(online, s, a), y)


def _td_online_target(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = _y(online, r, s2, done, gamma)
    return F.smooth_l1_loss(_q(online, s, a), y)


def _td_columns(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = _y(target, r, s2, done, gamma)
    return F.smooth_l1_loss(online(s)[:, a], y)  # q[:, a]: an (N, N) matrix, broadcast against y


def _td_unsqueezed(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = _y(target, r, s2, done, gamma)
    return F.smooth_l1_loss(online(s).gather(1, a.unsqueeze(1)), y)  # (N, 1) against (N,): (N, N) pairs


def _td_mse(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = _y(target, r, s2, done, gamma)
    return F.mse_loss(_q(online, s, a), y)


def _td_argmax(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = r + gamma * (1 - done) * target(s2).max(dim=1)[1]
    return F.smooth_l1_loss(_q(online, s, a), y)


def _td_done_on_r(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = (r + gamma * target(s2).max(dim=1).values) * (1 - done)
    return F.smooth_l1_loss(_q(online, s, a), y)


def _td_max_q(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = _y(target, r, s2, done, gamma)
    return F.smooth_l1_loss(online(s).max(dim=1).values, y)  # the greedy action's value, not the taken one's


def _td_summed(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = _y(target, r, s2, done, gamma)
    return F.smooth_l1_loss(_q(online, s, a), y, reduction="sum")


GATHER = "Q(s, a) is one number per transition, the action taken: online(s).gather(1, a.unsqueeze(1)).squeeze(1)"
# td_loss right on one transition, wrong on a batch: the causes one transition hides, each said only where it, applied
# to the reference, gives the student's values
TD_SIZE = Suspects(causes=(
    Cause(words="a sum over the transitions where the mean belongs (N times too large)",
          fix="F.smooth_l1_loss's default reduction is 'mean'", fn=_td_summed),
    Cause(words="Q(s, a) of shape (N, 1) against y of shape (N,), which broadcast to (N, N)", fix=GATHER,
          fn=_td_unsqueezed),
    Cause(words="the Q of another action than a (max Q(s): on one transition the action taken is the greedy one)",
          fix=GATHER, fn=_td_max_q)))


def _td_extra(outs: list[dict], cases: list[dict]) -> list[float]:
    return [max(float(global_norm(o["target"])) for o in outs)]


TD = Checks(
    harness=HARNESSES["td_loss"], reference=_td_reference,
    mistakes=[
        Mistake(name="no stop-gradient", fn=_td_no_stop,
                diagnosis="gradient reaches the target network: y must be a number to move towards. Compute it under "
                          "torch.no_grad(), or write y = y.detach() (y.detach() alone returns a new tensor and leaves "
                          "y in the graph)"),
        Mistake(name="done ignored", fn=_td_no_done,
                diagnosis="terminal transitions bootstrap from the next state: multiply γ · max target(s2) by "
                          "(1 − done): after a termination there is no next state to value"),
        Mistake(name="(1 − done) on r too", fn=_td_done_on_r, diagnosis=DONE_ON_R),
        Mistake(name="max Q(s), not Q(s, a)", fn=_td_max_q,
                diagnosis="your prediction is max_a' Q(s, a'), the value of the best action, not Q(s, a) of the action "
                          "a the transition took (the target takes a max; the prediction does not): "
                          "online(s).gather(1, a.unsqueeze(1)).squeeze(1); where a happens to be the greedy action the "
                          "two agree"),
        Mistake(name="online target", fn=_td_online_target,
                diagnosis="the target comes from the online network: use the target network, target(s2): a target held "
                          "fixed between syncs, which Mnih et al. (2015, Nature, 'Human-level control through deep "
                          "reinforcement learning') introduced to stabilise DQN"),
        Mistake(name="q[:, a]", fn=_td_columns,
                diagnosis="online(s)[:, a] takes whole columns, an (N, N) matrix (row i, column j: Q(s_i, a_j)), and "
                          "the loss then compares every Q with every y: pick one entry per row, online(s).gather(1, "
                          "a.unsqueeze(1)).squeeze(1) or online(s)[torch.arange(N), a]"),
    ],
    extra=_td_extra,
    names={"loss": "your loss", "online": "the gradient to online's parameters",
           "target": "the gradient to target's parameters"},
    quantities=_n,
    relations=[
        Relation(what="the loss over all N × N pairs (Q(s_i, a_i), y_j): Q of shape (N, 1) broadcast against y of "
                      "shape (N,)", fn=_td_unsqueezed,
                 hint="squeeze Q(s, a) to shape (N,): gather(1, a.unsqueeze(1)).squeeze(1) (PyTorch warns \"Using a "
                      "target size that is different to the input size\")"),
        Relation(what="the squared error (F.mse_loss), not the Huber loss (F.smooth_l1_loss)", fn=_td_mse,
                 hint="this lesson's DQN, like stable-baselines3's (dqn.py: F.smooth_l1_loss), uses the Huber loss: "
                      "½δ² for |δ| < 1, |δ| − ½ beyond"),
        Relation(what="the loss whose target bootstraps from the index of the best action (.max(1)[1]), not its value",
                 fn=_td_argmax, hint="use target(s2).max(dim=1).values (or .max(1)[0]): the value, not the index"),
        Relation(what="the loss whose target has done and 1 − done swapped (only terminal transitions bootstrap)",
                 fn=lambda online, target, s, a, r, s2, done, gamma: _td_reference(online, target, s, a, r, s2,
                                                                                   1 - done, gamma),
                 hint="multiply the bootstrap by (1 − done), which is 0 where the episode ended"),
    ],
    hints={**FAMILY_HINTS, SIZE: TD_SIZE,
           ("online", "zero", "*"): "no gradient reaches online's parameters: your loss has no graph to them (Q(s, a) "
                                    "detached, or computed under torch.no_grad()); detach only the target y",
           ("target", "nonzero", "*"): "gradient reaches the target network: compute y under torch.no_grad() (or y = "
                                       "y.detach()), it is a number to move towards",
           ("*", "scale", "N"): "a sum over the transitions where the mean belongs (F.smooth_l1_loss's default "
                                "reduction is 'mean')"})


CHECKS: dict[str, Checks] = {
    "td_target": TD_TARGET,
    "td_loss": TD,
}
