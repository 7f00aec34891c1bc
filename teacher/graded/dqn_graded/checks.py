"""dqn_graded.td_loss on gradlab's side only (never in the sandbox): the reference (autograd through the Double DQN
loss, float64) and the known mistakes, each with what to tell its author."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from gradlab.kit.exercise import Cause, Checks, Mistake, Relation, Suspects

from .harness import HARNESSES


def _q(online, s, a):
    return online(s).gather(1, a.unsqueeze(1)).squeeze(1)  # Q(s_i, a_i): the action each transition took


def _double_y(online, target, r, s2, done, gamma):
    a2 = online(s2).argmax(dim=1)  # the online network picks (ties: the first)
    return r + gamma * (1 - done) * target(s2).gather(1, a2.unsqueeze(1)).squeeze(1)  # the target network values


def reference(online, target, s, a, r, s2, done, gamma):
    """Double DQN's Huber TD loss, y computed under no_grad: autograd gives its gradient."""
    with torch.no_grad():
        y = _double_y(online, target, r, s2, done, gamma)
    return F.smooth_l1_loss(_q(online, s, a), y)


def _with_y(y_of):
    """The loss with the target Y_OF(online, target, r, s2, done, gamma), cut from the graph."""
    def loss(online, target, s, a, r, s2, done, gamma):
        with torch.no_grad():
            y = y_of(online, target, r, s2, done, gamma)
        return F.smooth_l1_loss(_q(online, s, a), y)
    return loss


def _dqn_y(online, target, r, s2, done, gamma):
    return r + gamma * (1 - done) * target(s2).max(dim=1).values  # DQN: the target network's own best action


def _swapped_y(online, target, r, s2, done, gamma):
    a2 = target(s2).argmax(dim=1)  # the target network picks, the online one values
    return r + gamma * (1 - done) * online(s2).gather(1, a2.unsqueeze(1)).squeeze(1)


def _argmin_y(online, target, r, s2, done, gamma):
    a2 = online(s2).argmin(dim=1)  # the worst action by online's values
    return r + gamma * (1 - done) * target(s2).gather(1, a2.unsqueeze(1)).squeeze(1)


def _unsqueezed(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = _double_y(online, target, r, s2, done, gamma)
    return F.smooth_l1_loss(online(s).gather(1, a.unsqueeze(1)), y)  # (N, 1) against (N,): an (N, N) broadcast


def _done_swapped_y(online, target, r, s2, done, gamma):
    return _double_y(online, target, r, s2, 1 - done, gamma)


def _online_y(online, target, r, s2, done, gamma):
    return r + gamma * (1 - done) * online(s2).max(dim=1).values  # online picks and values: no target network


def _no_done_y(online, target, r, s2, done, gamma):
    return _double_y(online, target, r, s2, torch.zeros_like(done), gamma)


def _done_on_r_y(online, target, r, s2, done, gamma):
    return _double_y(online, target, r, s2, torch.zeros_like(done), gamma) * (1 - done)


def _last_on_ties_y(online, target, r, s2, done, gamma):
    q2 = online(s2)
    a2 = (q2[:, 1] >= q2[:, 0]).long()  # two actions compared by hand: a tie goes to the second
    return r + gamma * (1 - done) * target(s2).gather(1, a2.unsqueeze(1)).squeeze(1)


def _columns_y(online, target, r, s2, done, gamma):
    a2 = online(s2).argmax(dim=1)
    return r + gamma * (1 - done) * target(s2)[:, a2]  # whole columns: an (N, N) matrix, broadcast against r


def _no_stop(online, target, s, a, r, s2, done, gamma):
    y = _double_y(online, target, r, s2, done, gamma)  # in the graph: its gradient reaches target's parameters
    return F.smooth_l1_loss(_q(online, s, a), y)


def _max_q(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = _double_y(online, target, r, s2, done, gamma)
    return F.smooth_l1_loss(online(s).max(dim=1).values, y)  # the greedy action's value, not the taken one's


def _summed(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = _double_y(online, target, r, s2, done, gamma)
    return F.smooth_l1_loss(_q(online, s, a), y, reduction="sum")


def _mse(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = _double_y(online, target, r, s2, done, gamma)
    return F.mse_loss(_q(online, s, a), y)


DQN_MAX = ("your target is DQN's, r + γ(1 − done) max_a' target(s2)[a']: the target network picks the action it then "
           "values, the overestimation Double DQN reduces (van Hasselt et al. 2016). Let the online network pick, "
           "a2 = online(s2).argmax(dim=1), and the target network value that action: target(s2).gather(1, "
           "a2.unsqueeze(1)).squeeze(1)")

CHECKS = {"td_loss": Checks(
    harness=HARNESSES["td_loss"], reference=reference,
    mistakes=[
        Mistake(name="DQN's max", fn=_with_y(_dqn_y), diagnosis=DQN_MAX),
        Mistake(name="roles swapped", fn=_with_y(_swapped_y),
                diagnosis="your target network picks the action and the online network values it: Double DQN does "
                          "the opposite, a2 = online(s2).argmax(dim=1), then target(s2) at a2"),
        Mistake(name="online values its own pick", fn=_with_y(_online_y),
                diagnosis="your target is max_a' online(s2)[a']: the online network picks and values, so the target "
                          "network is not used at all. The online network picks a2 = online(s2).argmax(dim=1); the "
                          "target network values it, target(s2) at a2"),
        Mistake(name="done ignored", fn=_with_y(_no_done_y),
                diagnosis="terminal transitions bootstrap from the next state: multiply γ · target(s2)[a2] by "
                          "(1 − done): after a termination there is no next state to value"),
        Mistake(name="(1 − done) on r too", fn=_with_y(_done_on_r_y),
                diagnosis="you multiplied the reward by (1 − done) too, which makes a terminal transition's target 0; "
                          "its target is r alone: only the bootstrap is masked, r + γ · (1 − done) · target(s2)[a2]"),
        Mistake(name="a tie goes to the last action", fn=_with_y(_last_on_ties_y),
                diagnosis="where online values both actions the same, your a2 is the second action; the contract "
                          "takes the first (torch.argmax's rule: online(s2).argmax(dim=1)), and a comparison "
                          "q[:, 1] >= q[:, 0] gives the second"),
        Mistake(name="target(s2)[:, a2]", fn=_with_y(_columns_y),
                diagnosis="target(s2)[:, a2] takes whole columns, an (N, N) matrix (row i, column j: target(s2_i, "
                          "a2_j)), so y is (N, N) and the loss is taken over N × N pairs: pick one entry per row, "
                          "target(s2).gather(1, a2.unsqueeze(1)).squeeze(1) or target(s2)[torch.arange(N), "
                          "a2]"),
        Mistake(name="no stop-gradient", fn=_no_stop,
                diagnosis="gradient reaches the target network through y: y must be a number to move towards. "
                          "Compute it under torch.no_grad(), or write y = y.detach()"),
        Mistake(name="max Q(s), not Q(s, a)", fn=_max_q,
                diagnosis="your prediction is max_a' online(s)[a'], the best action's value, not Q(s, a) of the "
                          "action a the transition took: online(s).gather(1, a.unsqueeze(1)).squeeze(1)"),
    ],
    names={"loss": "your loss", "online": "the gradient to online's parameters",
           "target": "the gradient to target's parameters"},
    quantities=lambda case: [("N", len(case["r"]), "the number of transitions")],
    relations=[Relation(what="the squared error (F.mse_loss), not the Huber loss (F.smooth_l1_loss)", fn=_mse,
                        hint="the contract's loss is Huber: F.smooth_l1_loss(q, y)"),
               Relation(what="the loss whose target values online's worst action (argmin), not its best",
                        fn=_with_y(_argmin_y), hint="the online network picks a2 = online(s2).argmax(dim=1)"),
               Relation(what="the loss over all N × N pairs (Q(s_i, a_i), y_j): Q of shape (N, 1) broadcast against y "
                        "of shape (N,)", fn=_unsqueezed, hint="squeeze Q(s, a) to shape (N,): gather(1, "
                        "a.unsqueeze(1)).squeeze(1)"),
               Relation(what="the loss whose target has done and 1 − done swapped (only terminal transitions "
                        "bootstrap)", fn=_with_y(_done_swapped_y), hint="multiply γ · target(s2)[a2] by (1 − done), "
                        "which is 0 where the episode ended")],
    hints={("*", "family", "sync:where online = target (just synced)"):
           "right only where online = target, where Double DQN's target is DQN's: the online network picks a2 = "
           "online(s2).argmax(dim=1), the target network values it",
           ("*", "family", "terminal:for non-terminal transitions"):
           "a terminal transition's target is its reward r alone: multiply only the bootstrap by (1 − done)",
           ("*", "family", "size:for one transition"): Suspects(causes=(  # each said only where it gives yours
               Cause(words="a sum over the transitions where the mean belongs", fn=_summed,
                     fix="F.smooth_l1_loss's default reduction is 'mean'"),
               Cause(words="Q(s, a) of shape (N, 1) against y of shape (N,), which broadcast to (N, N)", fn=_unsqueezed,
                     fix="Q(s, a) is one number per transition, online(s).gather(1, a.unsqueeze(1)).squeeze(1)"))),
           ("target", "nonzero", "*"): "gradient reaches the target network: compute y under torch.no_grad()",
           ("*", "scale", "N"): "a sum over the transitions where the mean belongs (F.smooth_l1_loss's default "
                                "reduction is 'mean')"})}
