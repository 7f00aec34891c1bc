"""stop_gradient on the DQN target, on CartPole.

The agent fits q(s, a), over a batch of N transitions (s, a, r, s', done), to a target y, moving the *online*
network only:

    y    = r + γ · (1 − done) · max_a' q_target(s', a')
    loss = (1/N) Σ_i Huber(δ_i),   δ_i = q(s_i, a_i) − y_i
    Huber(δ) = δ²/2 for |δ| ≤ 1, |δ| − 1/2 beyond (F.smooth_l1_loss): Huber′(δ) = clamp(δ, −1, 1)

done is 1 on termination only (the pole fell, the cart left the track), 0 when the 500-step time limit truncated
the episode. y is a number to move towards, not something to move. Two ways to keep the gradient out of y, which
must be exactly equivalent:

    stop-grad    y inside the graph, then cut: y.detach()             TF: tf.stop_gradient(y)
    placeholder  y in a separate pass: with torch.no_grad(): y = …    TF: placeholder, feed_dict

Without either (`--no-stop-grad`), backpropagation also flows through y. With h_i = Huber′(δ_i)/N:

    y cut            ∇loss = Σ_i h_i · ∇q(s_i, a_i)                      (the semi-gradient)
    through y, too   ∇loss = Σ_i h_i · (∇q(s_i, a_i) − γ(1 − done_i) · ∇max_a' q_target(s'_i, a'))

With a separate target network, the added term is a gradient for the target network's parameters, and TF-1's
`minimize(loss)` trains every trainable variable (its var_list's default, tensorflow/python/training/optimizer.py):
the target network is dragged along by the loss.

---

In the code: td_gradients_by_hand writes both terms out from the chain rule and the gradient anatomy checks them,
on one fixed batch, against what autograd computes through the TD loss (which the exercise dqn.td_loss asks you to
write; dqn.td_target is its y). make_networks hands the optimizer the target network's parameters too under
`--no-stop-grad` with a target network, as TF-1's `minimize` would, to show the drag.

With the target computed by the online network itself (`--no-target-net`), both terms land on the same parameters and
the update descends the TD loss itself: the *naive residual-gradient* algorithm (the lesson's page gives its sources),
here on the Huber TD loss rather than the squared one. It minimises the TD loss averaged over the sampled transitions.
For the square, E[δ² | s, a] = (E[δ | s, a])² + Var[δ | s, a]: the squared Bellman error plus the variance of the
sampled target, so the two agree only when (r, s', done) is a function of (s, a). CartPole's transitions are
deterministic in its float64 state, up to the float32 rounding of the observation the network sees (only reset() draws
random numbers: gymnasium/envs/classic_control/cartpole.py; tests/test_rl.py checks it), so here they agree. How the
variants *learn* is shown, not claimed: `--compare` trains them on the same seed, one run each, and no claim ranks them.

The agent reads top to bottom: Q-network, replay buffer, ε-greedy with a linear schedule, a target network synced
every N steps, Huber loss, Adam (its learning rate annealed to 0: settings.py says where the defaults differ from
rl-baselines3-zoo's). No RL framework.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from gradlab.kit import autograd_graph, rl
from gradlab.kit.exercise import relative_to_largest
from gradlab.kit.result import Claim, Column, Curve, Result, Table
from gradlab.kit.schedule import linear, set_lr
from gradlab.lessons.dqn.settings import TARGET_MODES as TARGET_MODES
from gradlab.lessons.dqn.settings import Config  # the settings, declared once (no torch: --help reads them)

LEARNERS = ("stop-grad", "placeholder")  # the variants whose learning is claimed
RESIDUAL = "residual gradient (no-stop-grad, no target net)"  # the naive residual-gradient algorithm (docstring)
# The variants --compare trains: (name, target mode, separate target network?)
COMPARE = [
    ("stop-grad", "stop-grad", True),
    ("placeholder", "placeholder", True),
    ("no-stop-grad", "no-stop-grad", True),
    ("stop-grad, no target net", "stop-grad", False),
    (RESIDUAL, "no-stop-grad", False),
]
# The gradient anatomy's "by hand" claims: relative to the largest number, float32 rounding of sums over 256
# transitions in another order (measured: below 1e-6 on seeds 0–99, see tests/test_dqn_lesson.py)
BY_HAND = 1e-5

# The curves' reference lines: the "learns" claims' mark and CartPole-v1's registered threshold (gradlab.kit.rl)
MARKS = {f"learns ({rl.LEARNED:.0f}: v0's 'solved')": rl.LEARNED,
         f"v1's 'solved' ({rl.registered()[1]:.0f})": rl.registered()[1]}

# The code `--explain` shows beside the math, read from this file at run time.
EXPLAIN = ("td_gradients_by_hand", "make_networks")


# ---------------------------------------------------------------------------------------------------------------
# Q-network and replay buffer
# ---------------------------------------------------------------------------------------------------------------

def q_network(obs_dim: int, n_actions: int, hidden: int) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(obs_dim, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, n_actions))


class Batch(NamedTuple):
    """N transitions (s, a, r, s', done), one tensor per field, as cleanrl's `data.rewards`."""

    obs: torch.Tensor  # s, N × 4
    actions: torch.Tensor  # a, N (int64)
    rewards: torch.Tensor  # r, N
    next_obs: torch.Tensor  # s', N × 4
    dones: torch.Tensor  # 1.0 on termination only, 0.0 when the time limit truncated the episode


class ReplayBuffer:
    """A ring buffer of transitions in preallocated arrays; batches are sampled uniformly (seeded)."""

    def __init__(self, capacity: int, obs_dim: int, seed: int):
        self.s = np.zeros((capacity, obs_dim), np.float32)
        self.a = np.zeros(capacity, np.int64)
        self.r = np.zeros(capacity, np.float32)
        self.s2 = np.zeros((capacity, obs_dim), np.float32)
        self.done = np.zeros(capacity, np.float32)
        self.capacity, self.size, self.pos = capacity, 0, 0
        self.rng = np.random.default_rng(seed)

    def add(self, s, a, r, s2, done) -> None:
        i = self.pos
        self.s[i], self.a[i], self.r[i], self.s2[i], self.done[i] = s, a, r, s2, done
        self.pos = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, n: int) -> Batch:
        idx = self.rng.integers(0, self.size, n)
        return Batch(*(torch.from_numpy(x[idx]) for x in (self.s, self.a, self.r, self.s2, self.done)))


# ---------------------------------------------------------------------------------------------------------------
# The loss, three ways of treating the target
# ---------------------------------------------------------------------------------------------------------------

def td_loss(online, target_net, data: Batch, gamma: float, mode: str) -> torch.Tensor:
    """mean_i Huber(q(s_i, a_i) − y_i), y = r + γ(1 − done) max_a' q_target(s', a'), done = 1 on
    termination only (never on a time-limit truncation); MODE says how y is kept constant."""
    q = online(data.obs).gather(1, data.actions[:, None]).squeeze(1)  # q(s, a)
    if mode == "placeholder":
        with torch.no_grad():  # a separate pass whose result is a plain constant: the fed placeholder
            y = data.rewards + gamma * (1 - data.dones) * target_net(data.next_obs).max(dim=1).values
    else:
        y = data.rewards + gamma * (1 - data.dones) * target_net(data.next_obs).max(dim=1).values
        if mode == "stop-grad":
            y = y.detach()  # tf.stop_gradient(y)
        # no-stop-grad: y stays in the graph; the gradient flows into whatever computed it
    return F.smooth_l1_loss(q, y)


def td_gradients_by_hand(online, target_net, batch, gamma: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The two terms of the TD loss's gradient from the chain rule written out, not by backpropagating
    td_loss:

        semi       Σ_i h_i · ∇q(s_i, a_i)                       online's parameters (the y-cut gradient)
        bootstrap  −Σ_i h_i · γ(1 − done_i) · ∇max q_target(s'_i, ·)   target_net's (what flows through y)

    with h_i = Huber′(δ_i)/N = clamp(δ_i, −1, 1)/N computed from the numbers, no graph. Autograd only
    supplies the networks' own vector-Jacobian products (Σ_i w_i ∇f(x_i) for fixed weights w)."""
    s, a, r, s2, done = batch
    with torch.no_grad():
        y = r + gamma * (1 - done) * target_net(s2).max(dim=1).values
        h = (online(s).gather(1, a[:, None]).squeeze(1) - y).clamp(-1, 1) / len(r)  # Huber′(δ_i)/N
    q = online(s).gather(1, a[:, None]).squeeze(1)
    semi = torch.autograd.grad((h * q).sum(), list(online.parameters()))  # Σ_i h_i ∇q(s_i, a_i)
    bootstrap_weight = -h * gamma * (1 - done)  # ∂loss/∂max q_target(s'_i) = −h_i · γ(1 − done_i)
    boot = torch.autograd.grad((bootstrap_weight * target_net(s2).max(dim=1).values).sum(),
                               list(target_net.parameters()))
    return torch.cat([g.flatten() for g in semi]), torch.cat([g.flatten() for g in boot])


# ---------------------------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------------------------

def make_networks(config: Config, obs_dim: int, n_actions: int):
    torch.manual_seed(config.seed)
    online = q_network(obs_dim, n_actions, config.hidden)
    # With --no-target-net the "target network" *is* the online network.
    target_net = copy.deepcopy(online) if config.target_net else online
    params = list(online.parameters())
    if config.target_net and config.target == "no-stop-grad":
        params += list(target_net.parameters())  # TF-1's minimize() trains every trainable variable
    # fused: one kernel for the whole update instead of a dozen small ones per tensor (20% of the run, measured)
    return online, target_net, torch.optim.Adam(params, lr=config.lr, fused=True)


def epsilon(config: Config, step: int) -> float:
    """Linear schedule from eps_start to eps_end over eps_fraction · total_steps, then flat."""
    return linear(config.eps_start, config.eps_end, step, max(1, int(config.eps_fraction * config.total_steps)))


@dataclass(frozen=True)
class Run:
    """One variant's training run (train()), then its evaluation on fresh greedy episodes (train_variants())."""

    episodes: list[tuple[int, float]]  # (the step at which each episode ended, its return)
    online: torch.nn.Module  # the last network
    checkpoint: rl.BestCheckpoint  # the best network, chosen on greedy episodes
    stopped: str | None  # why training stopped early (the loss became non-finite), or None
    wall_s: float
    steps_per_s: float
    loss: float  # mean TD loss over every gradient step (NaN when none was taken)
    eval: list[float] = field(default_factory=list)  # the best checkpoint's returns on fresh greedy episodes
    eval_last: list[float] = field(default_factory=list)  # the last network's, on the same episodes

    @property
    def eval_mean(self) -> float:  # the claim's number
        return float(np.mean(self.eval))


def train(config: Config, progress: Callable[[int, float], None] = lambda step, ret: None) -> Run:
    """Run DQN for total_steps; return episode returns, the last and the best network, steps/s and the mean loss.

    The best network is chosen by greedy evaluations every eval_every steps (rl.BestCheckpoint); they use their own
    environment and no random numbers, so the training run is the same with or without them."""
    env = rl.make_env()
    obs_dim, n_actions = env.observation_space.shape[0], env.action_space.n
    online, target_net, optimizer = make_networks(config, obs_dim, n_actions)
    # a run never stores more than total_steps transitions: a larger capacity would only allocate memory
    buffer = ReplayBuffer(min(config.buffer_size, config.total_steps), obs_dim, config.seed)
    checkpoint = rl.BestCheckpoint(config.eval_every, config.checkpoint_episodes, config.seed)
    rng = np.random.default_rng(config.seed + 1)  # ε-greedy draws
    episodes: list[tuple[int, float]] = []  # (step at which the episode ended, its return)
    s, _ = env.reset(seed=config.seed)
    ep_return, last_return, losses = 0.0, 0.0, []
    trained = False  # has a gradient step changed the networks since the last target sync?
    stopped, start = None, time.perf_counter()
    for step in range(1, config.total_steps + 1):
        if rng.random() < epsilon(config, step):
            a = int(rng.integers(n_actions))
        else:
            with torch.no_grad():
                a = int(online(torch.from_numpy(s)).argmax())
        s2, r, terminated, truncated, _ = env.step(a)
        buffer.add(s, a, r, s2, float(terminated))  # bootstrap through time-limit truncation, not termination
        ep_return += r
        s = s2
        if terminated or truncated:
            episodes.append((step, ep_return))
            last_return, ep_return = ep_return, 0.0
            s, _ = env.reset()
        if step > config.learning_starts and step % config.train_every == 0:
            if config.anneal_lr:
                set_lr(optimizer, linear(config.lr, 0, step, config.total_steps))
            for _ in range(config.gradient_steps):
                loss = td_loss(online, target_net, buffer.sample(config.batch_size), config.gamma, config.target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.detach())
            trained = True
            if not bool(torch.isfinite(loss)):  # the learning rate blew the network up: stop, say where
                stopped = (f"the TD loss became {loss.item()} after {step:,} environment steps; training stopped. "
                           f"The learning rate {config.lr} is too large: try --lr 0.0023")
                break
        if config.target_net and step % config.target_update == 0 and trained:
            # hard sync of the target network (skipped while no step has changed the networks: the copy would be
            # identical, so the run is the same as syncing every target_update steps)
            target_net.load_state_dict(online.state_dict())
            trained = False
        if checkpoint.due(step, config.total_steps):
            checkpoint.offer(step, online)
        if step % 1000 == 0:
            progress(step, last_return)
    wall = time.perf_counter() - start
    env.close()
    return Run(episodes=episodes, online=online, checkpoint=checkpoint, stopped=stopped, wall_s=wall,
               steps_per_s=config.total_steps / wall,
               loss=float(torch.stack(losses).mean()) if losses else math.nan)


# ---------------------------------------------------------------------------------------------------------------
# Gradient anatomy: one fixed batch, every variant, before any training
# ---------------------------------------------------------------------------------------------------------------

def anatomy_batch(config: Config, n: int = 256) -> Batch:
    """N transitions from a random policy, seeded: the fixed batch every variant is differentiated on."""
    env = rl.make_env()
    rng = np.random.default_rng(config.seed + 2)
    buffer = ReplayBuffer(n, env.observation_space.shape[0], config.seed)
    s, _ = env.reset(seed=config.seed + 2)
    for _ in range(n):
        a = int(rng.integers(env.action_space.n))
        s2, r, terminated, truncated, _ = env.step(a)
        buffer.add(s, a, r, s2, float(terminated))
        s = s2 if not (terminated or truncated) else env.reset()[0]
    env.close()
    return Batch(*(torch.from_numpy(x) for x in (buffer.s, buffer.a, buffer.r, buffer.s2, buffer.done)))


def anatomy_networks(config: Config, mode: str, separate: bool):
    """The anatomy's Config for one variant, and its online and target networks (the target perturbed, as one that
    lags would be)."""
    c = replace(config, target=mode, target_net=separate)
    online, target_net, _ = make_networks(c, 4, 2)
    if separate:  # a target network that lags: perturb it so that it differs from the online one
        with torch.no_grad():
            g = torch.Generator().manual_seed(config.seed + 3)
            for p in target_net.parameters():
                p.add_(0.05 * torch.randn(p.shape, generator=g))
    return c, online, target_net


LOOK = {  # what graphs() shows for each of COMPARE's variants
    "stop-grad": "look at: the ✂ cut (detach): y is a constant, nothing reaches the target network",
    "placeholder": "look at: the ✂ cut (no_grad): y fed as a constant, as TF's placeholder, the same gradient",
    "no-stop-grad": "look at: the red path into target.*: without a cut the TD target is trained too",
    "stop-grad, no target net": "look at: the ✂ cut (detach): one network, y still a constant",
    RESIDUAL: "look at: the online network reached twice, through q and through y: the residual gradient",
}


def graphs(config: Config, transitions: int = 256) -> list[autograd_graph.Graph]:
    """The TD loss's backward graph for each variant, on the anatomy's batch and networks: the path into the
    target network, and the cut (detach, no_grad) where there is one."""
    batch = Batch(*(t[:transitions] for t in anatomy_batch(config)))
    out = []
    for name, mode, separate in COMPARE:
        c, online, target_net = anatomy_networks(config, mode, separate)
        with autograd_graph.record():
            loss = td_loss(online, target_net, batch, c.gamma, mode)
        names = {"online": online, "target": target_net} if separate else {"online": online}
        out.append(autograd_graph.trace(loss, title=f"dqn, {name}: TD loss on {transitions} "
                                              f"transition{'s' * (transitions != 1)}",
                                        names=names, forbidden=("target",), note=LOOK[name]))
    return out


@dataclass(frozen=True)
class Gradients:
    """One variant's TD loss on the anatomy's batch and its gradient, by autograd and by hand."""

    online: torch.Tensor  # ∂loss/∂(online network's parameters), flattened
    target: torch.Tensor | None  # ∂loss/∂(target network's parameters), or None without a target network
    loss: float  # the TD loss itself
    by_hand: float  # max relative difference from what td_gradients_by_hand predicts


def anatomy(config: Config, variants=COMPARE) -> dict[str, Gradients]:
    """For each variant: the loss gradient w.r.t. the online and the target network's parameters, by autograd
    through td_loss, and what the chain rule written out by hand predicts for it (td_gradients_by_hand)."""
    batch = anatomy_batch(config)
    out = {}
    for name, mode, separate in variants:
        c, online, target_net = anatomy_networks(config, mode, separate)
        loss = td_loss(online, target_net, batch, c.gamma, mode)
        params = list(online.parameters()) + (list(target_net.parameters()) if separate else [])
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        n_online = len(list(online.parameters()))
        flat = [g if g is not None else torch.zeros_like(p) for g, p in zip(grads, params, strict=True)]
        got_online = torch.cat([g.flatten() for g in flat[:n_online]])
        got_target = torch.cat([g.flatten() for g in flat[n_online:]]) if separate else None
        semi, boot = td_gradients_by_hand(online, target_net, batch, c.gamma)
        through_y = mode == "no-stop-grad"
        if separate:  # the bootstrap term belongs to the target network, and only when y stays in the graph
            want_online, want_target = semi, boot if through_y else torch.zeros_like(boot)
            by_hand = max(relative_to_largest(got_online, want_online), relative_to_largest(got_target, want_target))
        else:  # one network: the bootstrap term adds to the same parameters (the naive residual gradient)
            want_online = semi + boot if through_y else semi
            by_hand = relative_to_largest(got_online, want_online)
        out[name] = Gradients(online=got_online, target=got_target, loss=float(loss.detach()), by_hand=by_hand)
    return out


def run(config: Config, device: torch.device | None = None,
        progress: Callable[[str, int, int], None] = lambda *a: None) -> Result:
    """Gradient anatomy, then training of the chosen variant (or all with --compare). Pure: no printing.

    The agent runs on the CPU: at this size (a 4→128→128→2 network, one transition per step) a GPU only adds
    transfer latency.
    """
    grads = anatomy(config)
    ref = grads["stop-grad"].online
    anatomy_rows = [[name, float(g.online.norm()), None if g.target is None else float(g.target.norm()),
                     float((g.online - ref).abs().max()), g.by_hand] for name, g in grads.items()]
    runs = train_variants(config, progress)
    windows = {name: rl.window_means(r.episodes, config.total_steps, config.windows) for name, r in runs.items()}
    edges = rl.window_edges(config.total_steps, config.windows)
    metrics = {name: {"window_mean_return": windows[name], "eval_returns": r.eval, "eval_mean": r.eval_mean,
                      "best_step": r.checkpoint.best_step, "checkpoint_returns": [s for _, s in r.checkpoint.history],
                      "eval_last_mean": float(np.mean(r.eval_last)), "episodes": len(r.episodes),
                      "mean_loss": r.loss, "steps_per_s": r.steps_per_s, "wall_s": r.wall_s}
               for name, r in runs.items()}
    metrics["anatomy"] = {row[0]: {"online_grad_norm": row[1], "target_grad_norm": row[2],
                                   "max_diff_from_stop_grad": row[3], "by_hand_max_relative": row[4]}
                          for row in anatomy_rows}
    collapsed = [note for name, r in runs.items() if not r.stopped
                 for note in rl.collapse_note(name, r.checkpoint.best_step, r.eval_mean, float(np.mean(r.eval_last)),
                                              config.total_steps)]
    centers = [(lo + hi) / 2 for lo, hi in edges]
    first = next(iter(runs.values())).checkpoint
    return Result(
        lesson="dqn", title="stop_gradient on the DQN target, on CartPole-v1",
        seed=config.seed, metrics=metrics, claims=[*anatomy_claims(grads), *training_claims(config, runs)],
        tables=[
            Table("gradient anatomy: one fixed batch of 256 random-policy transitions, before training",
                  [Column(header="variant"), Column(header="‖∇ online‖", format=".6g"),
                   Column(header="‖∇ target net‖", format=".6g"),
                   Column(header="max |Δ∇ online| vs stop-grad", format=".3g"),
                   Column(header="vs the chain rule by hand (max rel)", format=".3g")], anatomy_rows,
                  note="the target network is perturbed from the online one, as it is between syncs. By hand: "
                       "Σ h_i·∇q(s_i, a_i), plus −Σ h_i·γ(1 − done_i)·∇max q(s'_i, ·) where y stays in the graph "
                       "(on the target network, or with no target net on the online one), h_i = clamp(δ_i, −1, 1)/N"),
            Table(f"mean episodic return per window of {config.total_steps // config.windows:,} steps (training, "
                  f"with ε-greedy)", [Column(header="steps"), *(Column(header=n, format=".1f") for n in runs)],
                  [[rl.window_label(lo, hi), *[windows[n][w] for n in runs]] for w, (lo, hi) in enumerate(edges)]),
            summary_table(config, runs),
        ],
        curves={"training return": Curve("environment step", "mean episodic return in the window", centers,
                                         windows, refs=MARKS),
                "checkpoints": Curve("environment step", f"greedy return (mean of {config.checkpoint_episodes})",
                                     [step for step, _ in first.history],
                                     {name: [score for _, score in r.checkpoint.history]
                                      for name, r in runs.items()}, refs=MARKS)},
        # In --compare, a diverging variant without stop-grad or a target net is part of the lesson, not a failure
        notes=[rl.env_note()] + [f"{name} diverged: {r.stopped}" for name, r in runs.items()
                                 if r.stopped and config.compare and name not in LEARNERS] + collapsed,
        stopped="; ".join(f"{name}: {r.stopped}" for name, r in runs.items()
                          if r.stopped and (name in LEARNERS or not config.compare)) or None,
    )


def train_variants(config: Config, progress: Callable[[str, int, int], None]) -> dict[str, Run]:
    """Train the chosen variant (every one with --compare) and evaluate its best checkpoint and last policy on
    fresh greedy episodes: {variant: its Run, with eval and eval_last}."""
    if config.compare:
        variants = COMPARE
    else:
        label = config.target + ("" if config.target_net else ", no target net")
        if label == "no-stop-grad, no target net":
            label = RESIDUAL
        variants = [(label, config.target, config.target_net)]
    runs = {}
    for i, (name, mode, separate) in enumerate(variants):
        c = replace(config, target=mode, target_net=separate)

        def report(step, ret, i=i, name=name):
            progress(f"{name[:24]:24s} step {step}/{config.total_steps}  return {ret:.0f}",
                     i * config.total_steps + step, len(variants) * config.total_steps)

        out = train(c, report)
        best, last = out.checkpoint.fresh_returns(out.online, config.eval_episodes, bool(out.stopped))
        runs[name] = replace(out, eval=best, eval_last=last)
    return runs


def anatomy_claims(grads: dict[str, Gradients]) -> list[Claim]:
    ref = grads["stop-grad"].online
    return [
        Claim("anatomy-placeholder-equals-stop-grad", "gradient anatomy: placeholder ≡ stop-grad (bitwise, max |Δ|)",
              float((grads["placeholder"].online - ref).abs().max()), 0.0),
        Claim("anatomy-stop-grad-target-zero", "stop-grad: gradient reaching the target network (norm)",
              float(grads["stop-grad"].target.norm()), 0.0),
        # Falsifiable: a leak of the wrong size (no γ, no (1 − done), the Huber′ not clamped) misses the hand formula
        Claim("anatomy-no-stop-grad-target-by-hand", "no-stop-grad: the gradient reaching the target network ≡ "
              "−Σ h_i·γ(1 − done_i)·∇max q_target(s'_i, ·), h_i = Huber′(δ_i)/N, written out by hand (max "
              "relative |Δ|; its norm is in the table)", grads["no-stop-grad"].by_hand, BY_HAND),
        Claim("anatomy-residual-by-hand", "no target net, no-stop-grad: the naive residual gradient ≡ "
              "Σ h_i·(∇q(s_i, a_i) − γ(1 − done_i)·∇max q(s'_i, ·)), by hand (max relative |Δ|; its distance from "
              "stop-grad's is in the table)", grads[RESIDUAL].by_hand, BY_HAND),
    ]


def training_claims(config: Config, runs: dict[str, Run]) -> list[Claim]:
    """Placeholder ≡ stop-grad in training, when both ran; the first learner that ran learns."""
    claims = []
    if "placeholder" in runs and "stop-grad" in runs:
        a, b = runs["placeholder"], runs["stop-grad"]
        same_returns = [r for _, r in a.episodes] == [r for _, r in b.episodes]
        weight_diff = max(float((p - q).detach().abs().max()) for p, q in
                          zip(a.online.parameters(), b.online.parameters(), strict=True))
        claims.append(Claim("training-placeholder-equals-stop-grad", "training: placeholder ≡ stop-grad, same seed "
                            "(max |Δweight|; returns identical too)", weight_diff if same_returns else math.inf, 0.0))
    name = next((n for n in LEARNERS if n in runs), None)
    if name is not None:
        best = runs[name].checkpoint
        claims.append(Claim(f"{name}-learns", f"{name} learns: its best checkpoint (step {best.best_step:,} of "
                            f"{config.total_steps:,}, chosen on {config.checkpoint_episodes} greedy episodes) "
                            f"scores ≥ {rl.LEARNED:.0f} (CartPole-v0's 'solved' mark; v1's is "
                            f"{rl.registered()[1]:.0f}) on {config.eval_episodes} fresh greedy episodes (mean; "
                            f"the last policy is in the table)",
                            runs[name].eval_mean, rl.LEARNED, ">="))
    return claims


def summary_table(config: Config, runs: dict[str, Run]) -> Table:
    """Each variant's best checkpoint and last policy, on fresh greedy episodes."""
    rows = [[name, r.checkpoint.best_step, r.eval_mean, min(r.eval), float(np.mean(r.eval_last)),
             rl.after_best(r.eval_mean, float(np.mean(r.eval_last))), len(r.episodes), r.loss, r.steps_per_s, r.wall_s]
            for name, r in runs.items()]
    return Table(f"after training: greedy returns on {config.eval_episodes} fresh episodes, of the best checkpoint "
                 f"and of the last policy",
                 [Column(header="variant"), Column(header="best at step", format=","),
                  Column(header="best: mean", format=".1f"), Column(header="min", format=".0f"),
                  Column(header="last: mean", format=".1f"), Column(header="last vs best"), Column(header="episodes"),
                  Column(header="mean loss", format=".4g"), Column(header="steps/s", format=",.0f"),
                  Column(header="wall s", format=".1f")],
                 rows,
                 note=next(iter(runs.values())).checkpoint.note("policy"))
