"""The exercises of `gradlab actor-critic`, on gradlab's side: each one's reference answer, its known mistakes (a
realistic wrong implementation and what to tell its author) and what the diagnosis measures. Never imported beside a
submission."""

from __future__ import annotations

import contextlib

import torch

from gradlab.kit.exercise import Cause, Checks, Mistake, Relation, Suspects, optimizer_steps
from gradlab.lessons.actor_critic.exercises.harness import HARNESSES, _critic_harness

TERMINAL = {
    ("*", "family", "terminal:for non-terminal transitions"): "a terminal transition's target is its reward r "
                                                              "alone: multiply only the bootstrap γ · V(s2) by (1 − "
                                                              "done), not r (after a termination there is no next "
                                                              "state to value, but the reward was received)",
}


def size_family(summed, broadcast) -> dict:
    """The hint for an answer right on one transition and wrong on a batch: the two causes one transition hides, each
    said only where its experiment (SUMMED, BROADCAST: Causes) gives the student's values."""
    return {("*", "family", "size:for one transition"): Suspects(causes=(summed, broadcast))}


SUM_WORDS = "a sum over the transitions where the mean belongs (N times too large on a batch)"
BROADCAST_WORDS = "V(s) of shape (N, 1) against the target (N,): (N,) − (N, 1) is an (N, N) matrix"
SQUEEZE = "squeeze V(s) to shape (N,): critic(s).squeeze(1)"


def _n(case: dict) -> list:
    return [("N", case["r"].shape[1], "the number of transitions")]


# ---------------------------------------------------------------------------------------------------- actor_loss

def _advantage(critic, r, s, s2, done, gamma) -> torch.Tensor:
    """δ = r + γ(1 − done)V(s2) − V(s), cut from the graph: the actor must not move the critic."""
    with torch.no_grad():
        return r + gamma * (1 - done) * critic(s2).squeeze(1) - critic(s).squeeze(1)


def _log_pi(actor, s, a) -> torch.Tensor:
    return torch.log_softmax(actor(s), dim=1).gather(1, a.unsqueeze(1)).squeeze(1)


def _actor_reference(actor, critic, s, a, r, s2, done, gamma):
    return -(_log_pi(actor, s, a) * _advantage(critic, r, s, s2, done, gamma)).mean()


def _actor_critic_moves(actor, critic, s, a, r, s2, done, gamma):
    delta = r + gamma * (1 - done) * critic(s2).squeeze(1) - critic(s).squeeze(1)  # not detached
    return -(_log_pi(actor, s, a) * delta).mean()


def _actor_ascent(actor, critic, s, a, r, s2, done, gamma):
    return (_log_pi(actor, s, a) * _advantage(critic, r, s, s2, done, gamma)).mean()


def _actor_probabilities(actor, critic, s, a, r, s2, done, gamma):
    p = torch.softmax(actor(s), dim=1).gather(1, a.unsqueeze(1)).squeeze(1)
    return -(p * _advantage(critic, r, s, s2, done, gamma)).mean()


def _actor_all_actions(actor, critic, s, a, r, s2, done, gamma):
    return -(torch.log_softmax(actor(s), dim=1) * _advantage(critic, r, s, s2, done, gamma).unsqueeze(1)).mean()


def _actor_done_swapped(actor, critic, s, a, r, s2, done, gamma):
    return _actor_reference(actor, critic, s, a, r, s2, 1 - done, gamma)


def _actor_broadcast(actor, critic, s, a, r, s2, done, gamma):
    with torch.no_grad():
        delta = r + gamma * (1 - done) * critic(s2) - critic(s)  # (N,) + (N, 1): an (N, N) matrix
    return -(_log_pi(actor, s, a) * delta).mean()


def _actor_summed(actor, critic, s, a, r, s2, done, gamma):
    return -(_log_pi(actor, s, a) * _advantage(critic, r, s, s2, done, gamma)).sum()


def _actor_softmax_dim0(actor, critic, s, a, r, s2, done, gamma):
    log_pi = torch.log_softmax(actor(s), dim=0).gather(1, a.unsqueeze(1)).squeeze(1)
    return -(log_pi * _advantage(critic, r, s, s2, done, gamma)).mean()


def _actor_normalised(actor, critic, s, a, r, s2, done, gamma):
    delta = _advantage(critic, r, s, s2, done, gamma)
    return -(_log_pi(actor, s, a) * (delta - delta.mean()) / delta.std()).mean()


ACTOR_LOSS = Checks(
    harness=HARNESSES["actor_loss"], reference=_actor_reference,
    mistakes=[
        Mistake(name="critic not detached", fn=_actor_critic_moves,
                diagnosis="gradient reaches the critic through the advantage: δ must be a number to the actor (the "
                          "lesson: \"δ detached: the actor must not move the critic\"). Compute it under "
                          "torch.no_grad(), or use delta.detach()"),
        Mistake(name="ascent", fn=_actor_ascent,
                diagnosis="your loss is +mean(ln π · δ): minimising it makes actions with a positive advantage less "
                          "likely. The actor minimises −mean(ln π(a|s) · δ)"),
        Mistake(name="probabilities", fn=_actor_probabilities,
                diagnosis="you weighed π(a|s), the probability, by δ: the policy gradient is ∇ ln π(a|s) · δ, so the "
                          "loss takes the log-probability (log_softmax, then gather)"),
    ],
    names={"loss": "your loss", "actor": "the gradient to the actor's parameters",
           "critic": "the gradient to the critic's parameters"},
    quantities=_n,
    relations=[Relation(what="the loss over every action's log-probability, not the taken one's (no gather)",
                        fn=_actor_all_actions, hint="pick the taken action's log-probability: log_softmax(actor(s), "
                        "dim=1).gather(1, a.unsqueeze(1)).squeeze(1)"),
               Relation(what="the loss whose δ has done and 1 − done swapped (only terminal transitions bootstrap)",
                        fn=_actor_done_swapped, hint="multiply γ · V(s2) by (1 − done), which is 0 where the "
                        "episode ended"),
               Relation(what="the loss over all N × N pairs: V of shape (N, 1) broadcast against r of shape (N,) in δ",
                        fn=_actor_broadcast, hint=SQUEEZE),
               Relation(what="the loss with log_softmax taken over the batch (dim=0) instead of the actions",
                        fn=_actor_softmax_dim0, hint="normalise over the actions: log_softmax(actor(s), dim=1)"),
               Relation(what="the loss with δ normalised over the batch, (δ − mean δ) / std δ",
                        fn=_actor_normalised, hint="weigh ln π(a|s) by δ itself: normalising the advantages (a "
                        "trick of PPO's and A2C's implementations) changes each transition's weight, and on one "
                        "transition std δ is NaN")],
    hints={**TERMINAL,
           **size_family(Cause(words=SUM_WORDS, fix="take the mean, .mean()", fn=_actor_summed),
                         Cause(words=BROADCAST_WORDS, fix=SQUEEZE, fn=_actor_broadcast)),
           ("critic", "nonzero", "*"): "gradient reaches the critic: compute δ under torch.no_grad() (or detach it)",
           ("*", "scale", "N"): "a sum over the transitions where the mean belongs"})


# ------------------------------------------------------------------------------------------------- critic_update

def _critic_loss(critic, s, r, s2, done, gamma, cut: bool = True):
    """mean (target − V(s))², the target r + γ(1 − done)V(s2) cut from the graph (CUT False: the residual gradient)."""
    with torch.no_grad() if cut else contextlib.nullcontext():
        target = r + gamma * (1 - done) * critic(s2).squeeze(1)
    return ((target - critic(s).squeeze(1)) ** 2).mean()


def _critic_step(critic, optimizer, loss, put) -> None:
    """The explicit-gradient update: autograd.grad, PUT(p, g) into .grad, then the optimizer's step."""
    for p, g in zip(critic.parameters(), torch.autograd.grad(loss, list(critic.parameters())), strict=True):
        put(p, g)
    optimizer.step()


def _critic_reference(critic, optimizer, s, r, s2, done, gamma):
    _critic_step(critic, optimizer, _critic_loss(critic, s, r, s2, done, gamma), lambda p, g: setattr(p, "grad", g))


def _critic_residual(critic, optimizer, s, r, s2, done, gamma):
    _critic_step(critic, optimizer, _critic_loss(critic, s, r, s2, done, gamma, cut=False),
                 lambda p, g: setattr(p, "grad", g))


def _critic_added(critic, optimizer, s, r, s2, done, gamma):
    _critic_step(critic, optimizer, _critic_loss(critic, s, r, s2, done, gamma),
                 lambda p, g: setattr(p, "grad", g if p.grad is None else p.grad + g))


def _critic_uphill(critic, optimizer, s, r, s2, done, gamma):
    _critic_step(critic, optimizer, _critic_loss(critic, s, r, s2, done, gamma), lambda p, g: setattr(p, "grad", -g))


def _critic_wrong_side(critic, optimizer, s, r, s2, done, gamma):
    v = critic(s).squeeze(1).detach()
    loss = ((r + gamma * (1 - done) * critic(s2).squeeze(1) - v) ** 2).mean()
    _critic_step(critic, optimizer, loss, lambda p, g: setattr(p, "grad", g))


def _critic_done_swapped(critic, optimizer, s, r, s2, done, gamma):
    _critic_reference(critic, optimizer, s, r, s2, 1 - done, gamma)


def _critic_step_first(critic, optimizer, s, r, s2, done, gamma):
    grads = torch.autograd.grad(_critic_loss(critic, s, r, s2, done, gamma), list(critic.parameters()))
    optimizer.step()  # on what .grad held before this update
    for p, g in zip(critic.parameters(), grads, strict=True):
        p.grad = g


def _critic_manual_sgd(critic, optimizer, s, r, s2, done, gamma):
    lr = optimizer.param_groups[0]["lr"]
    grads = torch.autograd.grad(_critic_loss(critic, s, r, s2, done, gamma), list(critic.parameters()))
    with torch.no_grad():
        for p, g in zip(critic.parameters(), grads, strict=True):
            p -= lr * g


def _critic_summed(critic, optimizer, s, r, s2, done, gamma):
    loss = _critic_loss(critic, s, r, s2, done, gamma) * len(r)  # the sum of the squared errors
    _critic_step(critic, optimizer, loss, lambda p, g: setattr(p, "grad", g))


def _critic_broadcast(critic, optimizer, s, r, s2, done, gamma):
    with torch.no_grad():
        target = r + gamma * (1 - done) * critic(s2).squeeze(1)
    _critic_step(critic, optimizer, ((target - critic(s)) ** 2).mean(), lambda p, g: setattr(p, "grad", g))


# Torch's RMSprop (the harness's), not TF-1's (gradlab.kit.optim.TFRMSprop): written out only to spare torch._dynamo
class _RMSpropByHand:
    """torch.optim.RMSprop(lr=0.01, alpha=0.99, eps=1e-5), the harness's optimizer, written out as
    torch/optim/rmsprop.py computes it (square_avg starts at 0, square_avg ← α·square_avg + (1 − α)·g²,
    p ← p − lr·g/(√square_avg + ε)), with the interface the exercise's code uses (param_groups, step, zero_grad).
    gradlab's process runs the reference and the known mistakes with it: constructing a torch optimizer imports
    torch._dynamo, about a second. tests/test_actor_critic_lesson.py checks every one against the real optimizer."""

    def __init__(self, params) -> None:
        self.params = list(params)
        self.param_groups = [{"params": self.params, "lr": 0.01, "alpha": 0.99, "eps": 1e-5}]
        self.square = [torch.zeros_like(p) for p in self.params]

    @torch.no_grad()
    def step(self) -> None:
        group = self.param_groups[0]
        for p, sq in zip(self.params, self.square, strict=True):
            if p.grad is None:  # torch's step skips a parameter without a gradient
                continue
            sq.mul_(group["alpha"]).addcmul_(p.grad, p.grad, value=1 - group["alpha"])
            p.addcdiv_(p.grad, sq.sqrt().add_(group["eps"]), value=-group["lr"])

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()


def _by_hand(fn):
    """FN's outputs through the harness's own code with _RMSpropByHand in place of torch's RMSprop."""
    return lambda case: _critic_harness(fn, case, _RMSpropByHand)


STEPS = ("the first update", "the second update", "the third update")

CRITIC = Checks(
    harness=HARNESSES["critic_update"], reference=_critic_reference, expected=_by_hand(_critic_reference),
    mistakes=[
        Mistake(name="residual gradient", fn=_critic_residual,
                diagnosis="the bootstrap V(s2) was differentiated too (the naive residual gradient, Sutton & Barto "
                          "§11.5): compute the target under torch.no_grad(), it is a number to move towards, as the "
                          "tutorial's fed td_target"),
        Mistake(name=".grad added to", fn=_critic_added,
                diagnosis="you added the new gradient to .grad, which still held the last one: assign p.grad = g "
                          "(torch.autograd.grad returns fresh gradients), or call optimizer.zero_grad() before "
                          "loss.backward()"),
        Mistake(name="uphill", fn=_critic_uphill,
                diagnosis="your update goes uphill: put the gradient itself in .grad; the optimizer subtracts it"),
    ],
    names={**{f"grad {k + 1}": f"the gradient optimizer.step() was given at {w}" for k, w in enumerate(STEPS)},
           **{f"params {k + 1}": f"the parameters after {w}" for k, w in enumerate(STEPS)}},
    quantities=_n,
    relations=[
        Relation(what="the gradient through V(s2) alone (V(s) detached instead of the target)", fn=_critic_wrong_side,
                 hint="detach the target r + γ(1 − done)V(s2), not V(s): the gradient flows through V(s)"),
        Relation(what="a hand-written SGD step p − lr·g (optimizer.step() never called)", fn=_critic_manual_sgd,
                 hint="hand the gradients to the optimizer: p.grad = g for each parameter, then optimizer.step()"),
        Relation(what="the mean over all N × N pairs (target_j − V(s)_i)²: V(s) of shape (N, 1) against the target "
                 "(N,)", fn=_critic_broadcast, hint=SQUEEZE),
        Relation(what="the update whose target has done and 1 − done swapped (only terminal transitions bootstrap)",
                 fn=_critic_done_swapped, hint="multiply γ · V(s2) by (1 − done), which is 0 where the episode ended"),
        Relation(what="optimizer.step() run before the new gradients were put in .grad (it stepped on the .grad the "
                 "critic held before this update)", fn=_critic_step_first,
                 hint="set p.grad = g for each parameter first, then call optimizer.step()"),
    ],
    hints={**TERMINAL,
           **size_family(Cause(words=SUM_WORDS, fix="take the mean, .mean()", fn=_critic_summed),
                         Cause(words=BROADCAST_WORDS, fix=SQUEEZE, fn=_critic_broadcast)),
           ("*", "scale", "1/2"): "a factor ½ in the loss: the critic's loss is mean (target − V(s))², whose gradient "
                                  "carries the 2",
           ("*", "scale", "N"): "a sum over the transitions where the mean belongs",
           ("*", "zero", "*"): "the parameters did not move"},
    experiments=[optimizer_steps],
    base=lambda case: {"params 1": case["weights"]},
    steps=[(f"grad {k + 1}", f"params {k + 1}") for k in range(3)])
_CAUSES = [c for h in CRITIC.hints.values() if isinstance(h, Suspects) for c in h.causes]
for _known in (*CRITIC.mistakes, *CRITIC.relations, *_CAUSES):  # run here with the optimizer written out
    _known.outputs = _by_hand(_known.fn)


CHECKS: dict[str, Checks] = {
    "actor_loss": ACTOR_LOSS,
    "critic_update": CRITIC,
}
