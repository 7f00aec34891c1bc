"""The exercises of `gradlab actor-critic`, on gradlab's side: each one's reference answer, its known mistakes (a
realistic wrong implementation and what to tell its author) and what its checks claim. Never imported beside a
submission."""

from __future__ import annotations

import contextlib

import torch

from gradlab.lessons.actor_critic.exercises.harness import HARNESSES
from gradlab.practice.exercise import Checks, Mistake

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


CRITIC = Checks(
    harness=HARNESSES["critic_update"], reference=_critic_reference,
    mistakes=[
        Mistake("residual gradient", _critic_residual, lambda s, r: "the bootstrap V(s2) was differentiated too (the "
                "naive residual gradient, Sutton & Barto §11.5): compute the target under torch.no_grad(), it is a "
                "number to move towards, as the tutorial's fed td_target"),
        Mistake(".grad added to", _critic_added, lambda s, r: "you added the new gradient to .grad, which still held "
                "the last one: assign p.grad = g (torch.autograd.grad returns fresh gradients)"),
        Mistake("uphill", _critic_uphill, lambda s, r: "your update goes uphill: put the gradient itself in .grad; "
                "the optimizer subtracts it"),
    ],
    claims={"critic": ("3 updates with your function ≡ with the explicit-gradient update, torch's RMSprop (max "
                       "relative |Δ| of the parameters)", 1e-5)})


CHECKS: dict[str, Checks] = {
    "critic_update": CRITIC,
}
