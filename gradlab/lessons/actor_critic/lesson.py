"""An actor-critic whose critic is trained from explicitly computed gradients with TF-1's RMSProp.

The critic V(s) learns the TD target; the actor follows the TD error δ, detached (it must not move the critic):

    δ = r + γ (1 − terminal) V(s') − V(s)        the TD error, also the advantage estimate
    critic: minimise mean δ²                     the target r + γ(1 − terminal)V(s') under no_grad
    actor:  minimise −mean(ln π(a|s) · δ) − β·entropy

The critic's gradients are computed, then applied, as the tutorial's TF-1 critic did:

    grads = torch.autograd.grad(loss, critic.parameters())   TF: tf.gradients(loss, params)
    p.grad = g for each p; optimizer.step()                   TF: apply_gradients(…)

`--grad-mode backward` takes the usual `loss.backward(); step()` instead: the two must train bit for bit alike.

The optimizer. TF-1's `RMSPropOptimizer(lr)` is not `torch.optim.RMSprop` (decay 0.9 against α; ε inside the root
against outside; the mean square starting at ones against zeros; TF 1.15 rmsprop.py and training_ops.cc, torch's
rmsprop.py):

    TF-1   ms₀ = 1   ms += (g² − ms)(1 − 0.9)    θ −= lr·g / √(ms + 1e-10)
    torch  v₀ = 0    v = α v + (1 − α) g²        θ −= lr·g / (√v + ε)

So with the same lr, torch's first step is lr·g/(√(1 − α)|g| + ε), about 10·lr on every coordinate whose
|g| ≫ ε/√(1 − α) = 1e-4 (with this lesson's α = 0.99, ε = 1e-5), while TF-1's is lr·g/√(0.9 + 0.1g²), tiny for
small gradients, and grows as ms forgets its start (0.9ᵏ after k updates).

---

In the code: critic_loss is mean (td_target − V(s))²; the critic's update, compute then apply, is the exercise
actor-critic.critic_update (and the actor's loss actor-critic.actor_loss), so its code is not shown here.
`gradlab.kit.optim.TFRMSprop` is TF-1's algorithm; it is the default (`--optimizer tf1-rmsprop`, for both
networks: the tutorial shows only the critic's optimizer). `--optimizer torch-rmsprop` is torch's as A2C
implementations set it (stable-baselines3's a2c.py: alpha=0.99, rms_prop_eps 1e-5). The run replays the critic's
first 50 gradients through both (the optimizer table), and tf1_rmsprop_by_hand, TF-1's kernel written out in
numpy, checks TFRMSprop (a claim).

get_params and set_params move every parameter as one flat vector (`parameters_to_vector` / `vector_to_parameters`),
where the tutorial used one placeholder and one assign op per parameter tensor; the run also copies through a
`state_dict`. The agent is a one-step actor-critic, A2C-style: several environments stepped in lockstep, one TD step
each. """

from __future__ import annotations

import copy
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from gradlab.errors import OptionError
from gradlab.kit import autograd_graph, rl
from gradlab.kit.optim import TFRMSprop
from gradlab.kit.result import Claim, Column, Curve, Result, Table
from gradlab.kit.schedule import linear, set_lr
from gradlab.lessons.actor_critic.settings import (  # the settings, declared once (no torch: --help reads them)
    Config,
)

CHECK_STEPS = 2_000  # environment steps of the second (other grad-mode) run behind the bitwise claim
REPLAY_STEPS = 50  # the critic's first gradients, replayed through both optimizers (the optimizer table) ...
REPLAY_ROWS = (1, 2, 3, 5, 10, 20, 30, 50)  # ... which shows these updates
NAMES = {"tf1-rmsprop": "TF-1's RMSProp", "torch-rmsprop": "torch's RMSprop"}
# The curves' reference lines: the learns claim's mark (CartPole-v0's registered 'solved' threshold, 195, a bar for
# learning within the budget) and CartPole-v1's own, for its 500-step episodes (gymnasium's registered 475): kit.rl
V1_SOLVED = rl.registered()[1]
MARKS = {f"learns ({rl.LEARNED:.0f}: v0's 'solved')": rl.LEARNED, f"v1's 'solved' ({V1_SOLVED:.0f})": V1_SOLVED}



# The code `--explain` shows beside the math, read from this file at run time.
EXPLAIN = ("critic_loss", "tf1_rmsprop_by_hand", "get_params", "set_params")
EXPLAIN_SHORT = ("critic_loss", "tf1_rmsprop_by_hand")  # what --explain prints in full; it names the others


def mlp(inputs: int, outputs: int, hidden: int) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(inputs, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, hidden),
                               torch.nn.Tanh(), torch.nn.Linear(hidden, outputs))


# ---------------------------------------------------------------------------------------------------------------
# The critic, the tutorial's way: compute, write .grad, apply
# ---------------------------------------------------------------------------------------------------------------

def critic_loss(critic, s, td_target) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean (td_target − V(s))², td)."""
    td = td_target - critic(s).squeeze(1)  # td = td_target − V(s)
    return td.pow(2).mean(), td


def graphs(config: Config, states: int = 4) -> list[autograd_graph.Graph]:
    """The critic's loss (td_target fed as a constant: computed under no_grad) and the actor's loss (td detached, so
    the actor does not train the critic), on a few seeded random states."""
    torch.manual_seed(config.seed)
    actor, critic = mlp(4, 2, config.hidden), mlp(4, 1, config.hidden)
    g = torch.Generator().manual_seed(config.seed)
    s, s2, r = torch.randn(states, 4, generator=g), torch.randn(states, 4, generator=g), torch.ones(states)
    names = {"actor": actor, "critic": critic}
    with autograd_graph.record():
        with torch.no_grad():  # the fed td_target: a constant, as in train()
            td_target = r + config.gamma * critic(s2).squeeze(1)
        loss, td = critic_loss(critic, s, td_target)
        dist = torch.distributions.Categorical(logits=actor(s))
        a = torch.zeros(states, dtype=torch.long)
        actor_loss = -(dist.log_prob(a) * td.detach()).mean()  # as train(): δ detached
    return [autograd_graph.trace(loss, title="actor-critic: the critic's loss", names=names, forbidden=("actor",),
                                 note="look at: the ✂ no_grad cut: the TD target is a constant, only critic.* learns"),
            autograd_graph.trace(actor_loss, title="actor-critic: the actor's loss (entropy term left out)",
                                 names=names, forbidden=("critic",),
                                 note="look at: the ✂ detach on δ: the actor's loss sends nothing into critic.*")]


def critic_update(critic, optimizer, s, td_target, mode: str) -> tuple[torch.Tensor, torch.Tensor]:
    """One optimizer step on mean (td_target − V(s))²; returns (loss, td). MODE: explicit or backward."""
    loss, td = critic_loss(critic, s, td_target)
    if mode == "explicit":
        params = list(critic.parameters())
        grads = torch.autograd.grad(loss, params)  # grads = tf.gradients(loss, params)
        for p, g in zip(params, grads, strict=True):
            p.grad = g  # what apply_gradients(zip(grads, params)) hands the optimizer
        optimizer.step()
    else:
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.detach(), td.detach()


# ---------------------------------------------------------------------------------------------------------------
# Get and set parameters: the tutorial's placeholders and assign ops
# ---------------------------------------------------------------------------------------------------------------

def get_params(net: torch.nn.Module) -> torch.Tensor:
    """All parameters as one flat vector (a copy)."""
    return parameters_to_vector(net.parameters()).detach().clone()


def set_params(net: torch.nn.Module, flat: torch.Tensor) -> None:
    """Write a flat vector back into the parameters, in the same order (the assign ops)."""
    with torch.no_grad():
        vector_to_parameters(flat, net.parameters())


def copy_checks(critic: torch.nn.Module, hidden: int, seed: int) -> tuple[float, float, int]:
    """Copy CRITIC into fresh networks via the flat vector and via state_dict; max |ΔV| on random states."""
    states = torch.randn(256, 4, generator=torch.Generator().manual_seed(seed + 7))
    fresh_a, fresh_b = mlp(4, 1, hidden), mlp(4, 1, hidden)
    set_params(fresh_a, get_params(critic))
    fresh_b.load_state_dict(critic.state_dict())
    with torch.no_grad():
        v = critic(states)
        return float((fresh_a(states) - v).abs().max()), float((fresh_b(states) - v).abs().max()), \
            get_params(critic).numel()


# ---------------------------------------------------------------------------------------------------------------
# The tutorial's optimizer: TF-1's RMSProp (gradlab.kit.optim.TFRMSprop) beside torch's, on the same gradients
# ---------------------------------------------------------------------------------------------------------------

def replay(name: str, critic: torch.nn.Module, grads: list[list[torch.Tensor]], lr: float) -> list[torch.Tensor]:
    """The flat parameters of a float64 copy of CRITIC before and after each update with GRADS by optimizer NAME."""
    net = copy.deepcopy(critic).double()
    opt = make_optimizer(name, net.parameters(), lr)
    out = [get_params(net)]
    for gs in grads:
        for p, g in zip(net.parameters(), gs, strict=True):
            p.grad = g.double()
        opt.step()
        out.append(get_params(net))
    return out


# Not gradlab.kit.optim.TFRMSprop on purpose: the kernel written out apart is what the claim checks TFRMSprop against
def tf1_rmsprop_by_hand(theta: np.ndarray, grads: list[np.ndarray], lr: float, decay: float = 0.9,
                        epsilon: float = 1e-10) -> list[np.ndarray]:
    """TF-1's ApplyRMSProp written out in numpy, momentum 0 (training_ops.cc v1.15.0 lines 461-464)."""
    ms, out = np.ones_like(theta), [theta]  # the "rms" slot starts at ones (rmsprop.py lines 118-123)
    for g in grads:
        ms = ms + (g * g - ms) * (1 - decay)  # ms += (g² − ms)·(1 − ρ)
        theta = theta - lr * g / np.sqrt(ms + epsilon)  # var −= lr·g/√(ms + ε)
        out.append(theta)
    return out


@dataclass(frozen=True)
class Replayed:
    """The critic's first gradients replayed through both optimizers from its initial weights (optimizer_steps)."""

    by_hand: float  # max |Δθ| of TFRMSprop from TF-1's kernel by hand, relative to the largest step
    tf1: list[float]  # TF-1's RMSProp: mean |Δθ| / lr of each update
    torch: list[float]  # torch's RMSprop: the same
    first_ratio: float  # torch's first step ÷ TF-1's, median over the parameters the gradient moved
    grad_rms: list[float]  # the rms of each replayed gradient


def optimizer_steps(critic_init: torch.nn.Module, grads: list[list[torch.Tensor]], lr: float) -> Replayed:
    """Replay the critic's first GRADS through both optimizers from its initial weights, and TF-1's by hand."""
    tf1, torch_ = replay("tf1-rmsprop", critic_init, grads, lr), replay("torch-rmsprop", critic_init, grads, lr)
    flat = [torch.cat([g.reshape(-1) for g in gs]).double() for gs in grads]
    hand = tf1_rmsprop_by_hand(tf1[0].numpy(), [g.numpy() for g in flat], lr)
    size = max(float(np.abs(b - a).max()) for a, b in itertools.pairwise(hand))  # the largest step, by hand
    if size == 0:  # measured, not guessed: at this lr every step, lr·g/√(ms + ε), is lost in θ's rounding
        raise OptionError("critic_lr", lambda say: f"{say('critic_lr')} {lr:g} is too small to move the critic: "
                          f"replayed in float64, none of its first {len(grads)} RMSProp steps changes a single "
                          "weight, so the two optimizers' steps cannot be compared", example=2e-3)
    by_hand = max(float(np.abs(t.numpy() - h).max()) for t, h in zip(tf1, hand, strict=True)) / size
    step = [[float((b - a).abs().mean()) / lr for a, b in itertools.pairwise(traj)] for traj in (tf1, torch_)]
    moved = flat[0] != 0
    ratio = ((torch_[1] - torch_[0]).abs()[moved] / (tf1[1] - tf1[0]).abs()[moved]).median()
    return Replayed(by_hand=by_hand, tf1=step[0], torch=step[1], first_ratio=float(ratio),
                    grad_rms=[float(g.pow(2).mean().sqrt()) for g in flat])


# ---------------------------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------------------------

def make_optimizer(name: str, params, lr: float) -> torch.optim.Optimizer:
    """The network's optimizer: TF-1's RMSProp (the tutorial's) or torch's (as A2C implementations configure it)."""
    if name == "tf1-rmsprop":
        return TFRMSprop(params, lr=lr)  # tf.train.RMSPropOptimizer(lr): decay 0.9, ε 1e-10 inside √, ms₀ = 1
    return torch.optim.RMSprop(params, lr=lr, alpha=0.99, eps=1e-5)  # α 0.99, ε outside √, v₀ = 0


@dataclass(frozen=True)
class Run:
    """One training run (train()): the networks, what was recorded along the way, and how fast it went."""

    actor: torch.nn.Module
    critic: torch.nn.Module
    critic_init: torch.nn.Module  # the critic before its first update (optimizer_steps replays from it)
    first_grads: list[list[torch.Tensor]]  # the critic's first REPLAY_STEPS gradients
    checkpoint: rl.BestCheckpoint  # the best actor, chosen on greedy episodes
    episodes: list[tuple[int, float]]  # (the step at which each episode ended, its return)
    stopped: str | None  # why training stopped early (the actor's outputs became non-finite), or None
    loss: torch.Tensor  # the critic's loss at each update
    abs_td: torch.Tensor  # mean |δ| at each update
    steps: int  # environment steps taken, summed over the environments
    wall_s: float
    steps_per_s: float


def _step_all(envs: list, actions: torch.Tensor, s: np.ndarray, ep_returns: np.ndarray, episodes: list,
              step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float | None]:
    """Every environment one step on its action: (s', r, terminal, the states to act from next (an ended episode's
    environment reset), the return of the last episode that ended, or None). EPISODES gets (step, return) of each
    episode that ended; EP_RETURNS the rewards so far."""
    s2, r, terminal = np.empty_like(s), np.empty(len(envs), np.float32), np.empty(len(envs), np.float32)
    next_s, ended = np.empty_like(s), None
    for i, env in enumerate(envs):
        s2[i], r[i], term, trunc, _ = env.step(int(actions[i]))
        terminal[i] = float(term)
        ep_returns[i] += r[i]
        next_s[i] = s2[i]
        if term or trunc:
            episodes.append((step + i + 1, float(ep_returns[i])))
            ended, ep_returns[i] = float(ep_returns[i]), 0.0
            next_s[i] = env.reset()[0]
    return s2, r, terminal, next_s, ended


def train(config: Config, progress: Callable[[int, float], None] = lambda step, ret: None) -> Run:
    torch.manual_seed(config.seed)
    actor, critic = mlp(4, 2, config.hidden), mlp(4, 1, config.hidden)
    critic_init = copy.deepcopy(critic)
    actor_opt = make_optimizer(config.optimizer, actor.parameters(), config.actor_lr)
    critic_opt = make_optimizer(config.optimizer, critic.parameters(), config.critic_lr)
    first_grads: list[list[torch.Tensor]] = []  # the critic's first gradients, replayed by optimizer_steps()
    envs = [rl.make_env() for _ in range(config.envs)]
    checkpoint = rl.BestCheckpoint(config.eval_every, config.checkpoint_episodes, config.seed)
    last_step = config.total_steps - config.total_steps % config.envs
    s = np.stack([env.reset(seed=config.seed + i)[0] for i, env in enumerate(envs)])
    g = torch.Generator().manual_seed(config.seed)
    ep_returns = np.zeros(config.envs)
    episodes, losses, abs_td = [], [], []
    step, last_return, stopped, start = 0, 0.0, None, time.perf_counter()
    while step + config.envs <= config.total_steps:
        st = torch.from_numpy(s)
        logits = actor(st)
        if not bool(torch.isfinite(logits).all()):  # the learning rates blew the networks up: stop, say where
            stopped = (f"the actor's outputs became non-finite after {step:,} environment steps; training stopped. "
                       f"The learning rates (--critic-lr {config.critic_lr}, --actor-lr {config.actor_lr}) are too "
                       f"large: try the defaults")
            break
        dist = torch.distributions.Categorical(logits=logits)
        a = torch.multinomial(dist.probs.detach(), 1, generator=g).squeeze(1)  # seeded sampling
        s2, r, terminal, next_s, ended = _step_all(envs, a, s, ep_returns, episodes, step)
        last_return = last_return if ended is None else ended
        step += config.envs
        if config.anneal_lr:
            set_lr(actor_opt, linear(config.actor_lr, 0, step, config.total_steps))
            set_lr(critic_opt, linear(config.critic_lr, 0, step, config.total_steps))
        with torch.no_grad():  # the fed td_target: a constant, as in the tutorial
            td_target = torch.from_numpy(r) + config.gamma * (1 - torch.from_numpy(terminal)) * \
                critic(torch.from_numpy(s2)).squeeze(1)  # bootstraps from s' even when truncated
        loss, td = critic_update(critic, critic_opt, st, td_target, config.grad_mode)
        if len(first_grads) < REPLAY_STEPS:
            first_grads.append([p.grad.detach().clone() for p in critic.parameters()])
        # the actor follows the advantage estimate δ, detached so the actor does not train the critic
        actor_loss = -(dist.log_prob(a) * td).mean() - config.entropy * dist.entropy().mean()
        actor_opt.zero_grad()
        actor_loss.backward()
        actor_opt.step()
        losses.append(loss)
        abs_td.append(td.abs().mean())
        s = next_s
        if checkpoint.due(step, last_step, config.envs):
            checkpoint.offer(step, actor)  # greedy: the argmax of the actor's logits
        if step % (config.envs * 250) == 0:
            progress(step, last_return)
    wall = time.perf_counter() - start
    for env in envs:
        env.close()
    return Run(actor=actor, critic=critic, critic_init=critic_init, first_grads=first_grads, checkpoint=checkpoint,
               episodes=episodes, stopped=stopped, loss=torch.stack(losses) if losses else torch.zeros(0),
               abs_td=torch.stack(abs_td) if abs_td else torch.zeros(0), steps=step, wall_s=wall,
               steps_per_s=step / wall)


def run(config: Config, device: torch.device | None = None,
        progress: Callable[[str, int, int], None] = lambda *a: None) -> Result:
    """Train, evaluate greedily, check explicit ≡ backward and the parameter copies. Pure: no printing."""
    out = train(config, lambda step, ret: progress(f"{config.grad_mode} step {step}/{config.total_steps}  "
                                                   f"return {ret:.0f}", step, config.total_steps))
    best = out.checkpoint
    eval_returns, last_returns = best.fresh_returns(out.actor, config.eval_episodes, bool(out.stopped))
    mean_eval, mean_last = float(np.mean(eval_returns)), float(np.mean(last_returns))
    short, weight_diff = explicit_vs_backward(config)
    copies = copy_checks(out.critic, config.hidden, config.seed)
    opt = optimizer_steps(out.critic_init, out.first_grads, config.critic_lr)
    edges = rl.window_edges(out.steps, config.windows)
    returns = rl.window_means(out.episodes, out.steps, config.windows)
    per_update = np.array_split(np.arange(len(out.loss)), config.windows)
    loss_w = [float(out.loss[idx].mean()) for idx in per_update]
    td_w = [float(out.abs_td[idx].mean()) for idx in per_update]
    centers = [(lo + hi) / 2 for lo, hi in edges]
    return Result(
        lesson="actor-critic",
        title=f"a critic trained from explicit gradients with {NAMES[config.optimizer]} (one-step actor-critic)",
        seed=config.seed,
        metrics={"window_mean_return": returns, "window_critic_loss": loss_w, "window_mean_abs_td": td_w,
                 "eval_returns": eval_returns, "eval_mean": mean_eval, "best_step": best.best_step,
                 "checkpoint_returns": [score for _, score in best.history],
                 "eval_last_mean": mean_last, "episodes": len(out.episodes),
                 "steps_per_s": out.steps_per_s, "wall_s": out.wall_s, "critic_parameters": copies[2],
                 "optimizer_steps": {"tf1": opt.tf1, "torch": opt.torch, "grad_rms": opt.grad_rms}},
        claims=claims(config, out, mean_eval, short, weight_diff, copies, opt),
        tables=[
            optimizer_table(config, opt),
            Table(f"training ({config.grad_mode} critic gradients, {config.envs} environments in lockstep)",
                  [Column(header="env steps"), Column(header="mean episodic return", format=".1f"),
                   Column(header="critic loss", format=".4f"), Column(header="mean |td|", format=".4f")],
                  [[rl.window_label(lo, hi), ret, lw, tw]
                   for (lo, hi), ret, lw, tw in zip(edges, returns, loss_w, td_w, strict=True)]),
            Table(f"after training: greedy returns on {config.eval_episodes} fresh episodes",
                  [Column(header="best checkpoint (step)", format=","), Column(header="its mean return", format=".1f"),
                   Column(header="its min", format=".0f"), Column(header="last actor's mean", format=".1f"),
                   Column(header="last vs best"), Column(header="training episodes"),
                   Column(header="env steps/s", format=",.0f"), Column(header="wall s", format=".1f")],
                  [[best.best_step, mean_eval, min(eval_returns), mean_last, rl.after_best(mean_eval, mean_last),
                    len(out.episodes), out.steps_per_s, out.wall_s]], note=best.note("actor")),
        ],
        curves={"training": Curve("environment step", "mean episodic return in the window", centers,
                                  {"return": returns}, refs=MARKS),
                "critic": Curve("environment step", "critic loss, mean |td|", centers,
                                {"critic loss": loss_w, "mean |td|": td_w}, logy=True),
                "checkpoints": Curve("environment step", f"greedy return (mean of {config.checkpoint_episodes})",
                                     [step for step, _ in best.history],
                                     {"actor": [score for _, score in best.history]},
                                     refs=MARKS)},
        notes=[rl.env_note(), *([] if out.stopped else rl.collapse_note(
            "the actor", best.best_step, mean_eval, mean_last, out.steps))],
        stopped=out.stopped,
    )


def explicit_vs_backward(config: Config) -> tuple[Config, float]:
    """Bitwise: the same seed with the other grad mode, over the first CHECK_STEPS steps, against a fresh run. The
    short config, and the largest weight difference (inf when the returns or losses differ)."""
    short = replace(config, total_steps=min(CHECK_STEPS, config.total_steps))
    other = "backward" if config.grad_mode == "explicit" else "explicit"
    a, b = train(short), train(replace(short, grad_mode=other))
    weight_diff = max(float(torch.where(p.isnan() & q.isnan(), 0.0, p - q).detach().abs().max()) for p, q in
                      zip([*a.critic.parameters(), *a.actor.parameters()],
                          [*b.critic.parameters(), *b.actor.parameters()], strict=True))
    same = a.episodes == b.episodes and torch.equal(a.loss, b.loss)
    return short, weight_diff if same else math.inf


def claims(config: Config, out: Run, mean_eval: float, short: Config, weight_diff: float,
           copies: tuple[float, float, int], opt: Replayed) -> list[Claim]:
    best = out.checkpoint
    flat_diff, state_diff, n_params = copies
    return [
        Claim("explicit-equals-backward", f"critic via autograd.grad → .grad → {config.optimizer} ≡ loss.backward(), "
              f"same seed, first {short.total_steps:,} steps (max |Δweight|; returns and losses identical too)",
              weight_diff, 0.0),
        Claim("copy-flat-vector", f"critic copied through parameters_to_vector / vector_to_parameters ({n_params} "
              f"numbers): max |ΔV| on 256 states", flat_diff, 0.0),
        Claim("copy-state-dict", "critic copied through state_dict: max |ΔV| on 256 states", state_diff, 0.0),
        Claim("tf1-rmsprop-by-hand", f"TFRMSprop ≡ TF-1's RMSProp kernel written out in numpy (ms₀ = 1, decay 0.9, "
              f"ε inside √): the critic's first {len(out.first_grads)} gradients, float64, max |Δθ| relative to "
              f"the largest step", opt.by_hand, 1e-9),
        Claim("optimizers-differ", "same first gradient, same lr: torch.optim.RMSprop's step ÷ TF-1 RMSProp's, "
              "median over the critic's parameters (torch starts its mean square at 0, TF-1 at 1)",
              opt.first_ratio, 3.0, ">="),
        Claim("learns", f"the actor learns: its best checkpoint (step {best.best_step:,} of {out.steps:,}, chosen "
              f"on {config.checkpoint_episodes} greedy episodes) scores ≥ {rl.LEARNED:.0f} (CartPole-v0's 'solved' "
              f"mark; v1's is {V1_SOLVED:.0f}) on {config.eval_episodes} fresh greedy episodes (mean; the last actor "
              f"is in the table)", mean_eval, rl.LEARNED, ">="),
    ]


def optimizer_table(config: Config, opt: Replayed) -> Table:
    """The critic's first gradients replayed through TF-1's RMSProp and torch's (optimizer_steps)."""
    return Table(f"two optimizers called RMSProp, lr {config.critic_lr:g}: the critic's first {len(opt.tf1)} "
                 f"gradients from this run, replayed through each from its initial weights",
                 [Column(header="update"), Column(header="rms of g", format=".3g"),
                  Column(header="tf1-rmsprop: mean |Δθ| / lr", format=".3g"),
                  Column(header="torch-rmsprop: mean |Δθ| / lr", format=".3g"),
                  Column(header="torch ÷ tf1", format=".1f")],
                 [[k, opt.grad_rms[k - 1], opt.tf1[k - 1], opt.torch[k - 1],
                   opt.torch[k - 1] / opt.tf1[k - 1] if opt.tf1[k - 1] else math.nan]  # a step of 0: no ratio
                  for k in REPLAY_ROWS if k <= len(opt.tf1)],
                 note="TF-1 (tf.train.RMSPropOptimizer): ms₀ = 1, ms += (g² − ms)(1 − 0.9), Δθ = lr·g/√(ms + 1e-10); "
                      "torch: v₀ = 0, v = 0.99v + 0.01g², Δθ = lr·g/(√v + 1e-5), so its first step is about 10·lr on "
                      "every coordinate whose |g| ≫ 1e-4, whatever the size of |g| above that")
