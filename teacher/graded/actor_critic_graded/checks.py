"""actor_critic_graded.critic_update on gradlab's side only (never in the sandbox): the reference (autograd through the
n-step loss, float64) and the known mistakes, each with what to tell its author. They run through the harness's own
call, with its optimizer (TF-1's centered RMSProp written out in harness.py)."""

from __future__ import annotations

import torch

from gradlab.kit.exercise import Cause, Checks, Mistake, Relation, Suspects, optimizer_steps

from .harness import HARNESSES


def _v(critic, s):
    return critic(s).squeeze(-1)  # (…, 1) → (…)


def n_step_returns(r, done, bootstrap, gamma):
    """R_t = r_t + γ(1 − done_t)R_{t+1} for t = T−1 … 0, from R_T = BOOTSTRAP: one row per step."""
    out, R = [], bootstrap
    for t in reversed(range(len(r))):
        R = r[t] + gamma * (1 - done[t]) * R
        out.append(R)
    return torch.stack(out[::-1])


def _update(critic, optimizer, loss, put=lambda p, g: setattr(p, "grad", g)) -> None:
    """The explicit-gradient update: autograd.grad, PUT(p, g) into .grad, then the optimizer's step."""
    params = list(critic.parameters())
    for p, g in zip(params, torch.autograd.grad(loss, params), strict=True):
        put(p, g)
    optimizer.step()


def reference(critic, optimizer, s, r, done, s_last, gamma):
    with torch.no_grad():
        R = n_step_returns(r, done, _v(critic, s_last), gamma)
    _update(critic, optimizer, ((R - _v(critic, s)) ** 2).mean())


def _with_targets(targets, put=lambda p, g: setattr(p, "grad", g)):
    """The update whose targets are TARGETS(critic, s, r, done, s_last, gamma), cut from the graph."""
    def update(critic, optimizer, s, r, done, s_last, gamma):
        with torch.no_grad():
            R = targets(critic, s, r, done, s_last, gamma)
        _update(critic, optimizer, ((R - _v(critic, s)) ** 2).mean(), put)
    return update


def _one_step(critic, s, r, done, s_last, gamma):
    nxt = torch.cat([s[1:], s_last.unsqueeze(0)])  # s_{t+1}: the next row, s_last after the last
    return r + gamma * (1 - done) * _v(critic, nxt)  # the base exercise's target, step by step


def _no_done(critic, s, r, done, s_last, gamma):
    return n_step_returns(r, torch.zeros_like(done), _v(critic, s_last), gamma)


def _done_last_only(critic, s, r, done, s_last, gamma):
    masked = torch.zeros_like(done)
    masked[-1] = done[-1]  # only the bootstrap is masked; a termination earlier is not
    return n_step_returns(r, masked, _v(critic, s_last), gamma)


def _forwards(critic, s, r, done, s_last, gamma):
    out, R = [], _v(critic, s_last)
    for t in range(len(r)):  # forwards: each R_t made from the steps before it
        R = r[t] + gamma * (1 - done[t]) * R
        out.append(R)
    return torch.stack(out)


def _masks_reward(critic, s, r, done, s_last, gamma):
    out, R = [], _v(critic, s_last)
    for t in reversed(range(len(r))):
        R = (1 - done[t]) * (r[t] + gamma * R)  # the reward of a terminating step wiped out too
        out.append(R)
    return torch.stack(out[::-1])


def _next_done(critic, s, r, done, s_last, gamma):
    nxt = torch.cat([done[1:], torch.zeros_like(done[:1])])  # done_{t+1}: the next step's flag
    return n_step_returns(r, nxt, _v(critic, s_last), gamma)


def _gamma_power(critic, s, r, done, s_last, gamma):
    out, R, T = [], _v(critic, s_last), len(r)
    for t in reversed(range(T)):
        R = r[t] + gamma ** (T - t) * (1 - done[t]) * R  # discounted twice: γ^(T−t) on top of the recursion
        out.append(R)
    return torch.stack(out[::-1])


def _not_reversed(critic, s, r, done, s_last, gamma):
    return n_step_returns(r, done, _v(critic, s_last), gamma).flip(0)  # step t given step T−1−t's return


def _skips_first(critic, s, r, done, s_last, gamma):
    R = n_step_returns(r, done, _v(critic, s_last), gamma)
    R[0] = 0  # the backward loop stopped at t = 1: R_0 never computed
    return R


def _done_swapped(critic, s, r, done, s_last, gamma):
    return n_step_returns(r, 1 - done, _v(critic, s_last), gamma)


def _no_bootstrap(critic, s, r, done, s_last, gamma):
    return n_step_returns(r, done, torch.zeros_like(r[0]), gamma)


def _residual(critic, optimizer, s, r, done, s_last, gamma):
    R = n_step_returns(r, done, _v(critic, s_last), gamma)  # in the graph: the bootstrap V(s_last) is differentiated
    _update(critic, optimizer, ((R - _v(critic, s)) ** 2).mean())


def _n_step(critic, s, r, done, s_last, gamma):
    return n_step_returns(r, done, _v(critic, s_last), gamma)


_added = _with_targets(_n_step, put=lambda p, g: setattr(p, "grad", g if p.grad is None else p.grad + g))
_uphill = _with_targets(_n_step, put=lambda p, g: setattr(p, "grad", -g))


def _broadcast(critic, optimizer, s, r, done, s_last, gamma):
    with torch.no_grad():
        R = n_step_returns(r, done, _v(critic, s_last), gamma)
    _update(critic, optimizer, ((R - critic(s)) ** 2).mean())  # (T, N) against (T, N, 1): every pair


STEPS = ("the first update", "the second update", "the third update")

CHECKS = {"critic_update": Checks(
    harness=HARNESSES["critic_update"], reference=reference,
    mistakes=[
        Mistake(name="one-step targets", fn=_with_targets(_one_step),
                diagnosis="your targets are one-step TD targets, r_t + γ(1 − done_t)V(s_{t+1}): right for one step "
                          "(T = 1), not for a segment. Each step's target is its n-step return, computed backwards "
                          "from R_T = V(s_last): R_t = r_t + γ(1 − done_t)R_{t+1}"),
        Mistake(name="done ignored", fn=_with_targets(_no_done),
                diagnosis="your returns run through terminations: multiply the rest of the return by (1 − done_t), "
                          "R_t = r_t + γ(1 − done_t)R_{t+1}: after a termination nothing that follows belongs to the "
                          "episode"),
        Mistake(name="done only at the last step", fn=_with_targets(_done_last_only),
                diagnosis="you masked the bootstrap V(s_last) where the last step terminated, but not a termination "
                          "inside the segment: every step's (1 − done_t) cuts the sum, R_t = r_t + γ(1 − done_t)"
                          "R_{t+1}"),
        Mistake(name="returns computed forwards", fn=_with_targets(_forwards),
                diagnosis="you ran the recursion forwards (t = 0 … T−1), so each R_t is made of the rewards before "
                          "it: a return is the rewards after t, so start from R_T = V(s_last) and go backwards, "
                          "t = T−1 … 0"),
        Mistake(name="no bootstrap", fn=_with_targets(_no_bootstrap),
                diagnosis="your returns start from 0, as if every segment ended its episodes: where the last step "
                          "does not terminate, the rest of the episode is valued by the critic, R_T = V(s_last)"),
        Mistake(name="bootstrap not cut", fn=_residual,
                diagnosis="V(s_last) was differentiated too: the return is a number to move towards (the target "
                          "cut, as the tutorial's fed td_target); compute it under torch.no_grad()"),
        Mistake(name=".grad added to", fn=_added,
                diagnosis="you added the new gradient to .grad, which still held the last one: assign p.grad = g "
                          "(torch.autograd.grad returns fresh gradients)"),
        Mistake(name="uphill", fn=_uphill,
                diagnosis="your update goes uphill: put the gradient itself in .grad; the optimizer subtracts it"),
    ],
    names={**{f"grad {k + 1}": f"the gradient optimizer.step() was given at {w}" for k, w in enumerate(STEPS)},
           **{f"params {k + 1}": f"the parameters after {w}" for k, w in enumerate(STEPS)}},
    quantities=lambda case: [("TN", case["r"].shape[1] * case["r"].shape[2], "the number of steps × environments")],
    relations=[Relation(what="the update whose first step's target is 0 (R_0 never computed: the backward loop "
                        "stopped at t = 1)", fn=_with_targets(_skips_first),
                        hint="range(T − 1, 0, −1) leaves out t = 0: range(T − 1, −1, −1) includes it"),
               Relation(what="the update whose returns wipe out a terminating step's reward too, (1 − done_t)(r_t + "
                        "γR_{t+1})", fn=_with_targets(_masks_reward), hint="(1 − done_t) cuts only the bootstrap: "
                        "R_t = r_t + γ(1 − done_t)R_{t+1}"),
               Relation(what="the update whose returns are cut by the next step's flag done_{t+1}, not done_t",
                        fn=_with_targets(_next_done), hint="step t's return is cut by its own flag: R_t = r_t + γ(1 − "
                        "done_t)R_{t+1}"),
               Relation(what="the update whose returns are discounted twice: γ^(T−t) on top of the recursion's γ",
                        fn=_with_targets(_gamma_power), hint="the recursion discounts by one γ per step: R_t = r_t + "
                        "γ(1 − done_t)R_{t+1}"),
               Relation(what="the update whose returns are in reverse time order (step t given step T−1−t's)",
                        fn=_with_targets(_not_reversed), hint="a backward loop appends R_{T−1} first: reverse the list "
                        "(or fill a tensor at index t)"),
               Relation(what="the update whose returns have done and 1 − done swapped", fn=_with_targets(_done_swapped),
                        hint="each step's return is r_t + γ(1 − done_t)R_{t+1}: (1 − done_t) is 0 where the episode "
                        "ended"),
               Relation(what="the mean over every pair (R, V(s)) of a (T, N) target against V(s) of shape (T, N, 1)",
                        fn=_broadcast, hint="squeeze V(s) to shape (T, N): critic(s).squeeze(-1)")],
    hints={("*", "family", "length:for one step"): "right for one step, wrong for several: each step's target is "
                                                   "its n-step return R_t = r_t + γ(1 − done_t)R_{t+1}, from R_T = "
                                                   "V(s_last)",
           ("*", "family", "terminal:with no termination"): Suspects(causes=(
               Cause(words="(1 − done_t) multiplies the reward too, (1 − done_t)(r_t + γR_{t+1})",
                     fix="it cuts only the bootstrap: R_t = r_t + γ(1 − done_t)R_{t+1}",
                     fn=_with_targets(_masks_reward)),
               Cause(words="each return cut by the next step's flag done_{t+1}, not done_t",
                     fix="step t's return is cut by its own flag: R_t = r_t + γ(1 − done_t)R_{t+1}",
                     fn=_with_targets(_next_done)))),
           ("*", "scale", "1/2"): "a factor ½ in the loss: the loss is mean (R_t − V(s_t))², whose gradient "
                                  "carries the 2",
           ("*", "scale", "TN"): "a sum over the steps and environments where the mean belongs",
           ("*", "zero", "*"): "the parameters did not move"},
    experiments=[optimizer_steps],
    base=lambda case: {"params 1": case["weights"]},
    steps=[(f"grad {k + 1}", f"params {k + 1}") for k in range(3)])}
