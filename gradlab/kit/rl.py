"""The plumbing the reinforcement-learning lessons (dqn, actor-critic) share: CartPole, greedy evaluation, the best
checkpoint, and statistics over windows of a run. No lesson logic lives here.

Evaluation follows the well-tuned RL libraries (SB3's EvalCallback with `best_model_save_path`, which
rl-baselines3-zoo uses; reporting the chosen checkpoint on fresh episodes is gradlab's addition): every
`every` environment steps the current policy plays a few greedy episodes and, if it is the best so far, a copy of it
is kept. A checkpoint is *chosen* on those episodes and then *reported* on fresh ones (other start states), so the
number a claim shows is not the lucky maximum of many noisy evaluations.
"""

from __future__ import annotations

import copy
import itertools
import math
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
import torch

ENV_ID = "CartPole-v1"
# The mark the "learns" claims hold a policy to: a mean greedy return of 195. It is CartPole-v0's registered "solved"
# threshold (gymnasium/envs/__init__.py: id="CartPole-v0", max_episode_steps=200, reward_threshold=195.0), used here
# as a bar for *learning* within a run's budget on CartPole-v1, whose own registered threshold is 475.0 (500-step
# episodes: id="CartPole-v1", max_episode_steps=500, reward_threshold=475.0). env_note() reads both from gymnasium's
# registry and says so beside every table; bench/bench_seeds.py counts how many seeds reach each.
LEARNED = 195.0
FINAL_SEEDS = 10_000  # episode k of the reported evaluation starts from seed + FINAL_SEEDS + k ...
CHECKPOINT_SEEDS = 20_000  # ... and of a checkpoint evaluation from seed + CHECKPOINT_SEEDS + k: never the same


def make_env() -> gym.Env:
    return gym.make(ENV_ID)


def registered(env_id: str = ENV_ID) -> tuple[int, float]:
    """(max_episode_steps, reward_threshold) of ENV_ID as gymnasium registers it: 500 and 475.0 for CartPole-v1,
    200 and 195.0 for CartPole-v0."""
    spec = gym.spec(env_id)
    return spec.max_episode_steps, spec.reward_threshold


def env_note() -> str:
    """What the runs are judged against, read from gymnasium's registry: the learning mark is v0's, not v1's."""
    steps, solved = registered(ENV_ID)
    v0_steps, v0_solved = registered("CartPole-v0")
    return (f"{ENV_ID} (gymnasium {gym.__version__}): episodes are cut at {steps} steps, and gymnasium registers "
            f"its 'solved' threshold as {solved:.0f}. The 'learns' claims use CartPole-v0's, {v0_solved:.0f} (for "
            f"{v0_steps}-step episodes), as a bar for learning within the run's budget")

def evaluate(policy: torch.nn.Module, episodes: int, seed: int) -> list[float]:
    """Greedy returns (the argmax of POLICY's outputs, no exploration) of EPISODES episodes; episode k starts from
    seed + k. The episodes run in lockstep: one forward pass per step for every episode still going."""
    envs = [make_env() for _ in range(episodes)]
    states = [env.reset(seed=seed + k)[0] for k, env in enumerate(envs)]
    returns, live = [0.0] * episodes, list(range(episodes))
    while live:
        with torch.no_grad():
            actions = policy(torch.from_numpy(np.stack([states[k] for k in live]))).argmax(dim=1).tolist()
        still = []
        for k, a in zip(live, actions, strict=True):
            states[k], r, terminated, truncated, _ = envs[k].step(a)
            returns[k] += float(r)
            if not (terminated or truncated):
                still.append(k)
        live = still
    for env in envs:
        env.close()
    return returns


@dataclass
class BestCheckpoint:
    """Every EVERY environment steps, evaluate the policy on EPISODES greedy episodes and keep a copy of the best.

    Ties go to the later checkpoint: on CartPole many reach the maximum, and the later ones have trained longer.
    """

    every: int
    episodes: int
    seed: int
    history: list[tuple[int, float]] = field(default_factory=list)  # (step, mean greedy return)
    best_step: int = 0
    best_return: float = -math.inf
    best: torch.nn.Module | None = None

    def due(self, step: int, last_step: int, stride: int = 1) -> bool:
        """Whether the run, which just advanced by STRIDE steps to STEP, crossed a multiple of EVERY or ended."""
        return step // self.every != (step - stride) // self.every or step == last_step

    def offer(self, step: int, policy: torch.nn.Module) -> None:
        score = float(np.mean(evaluate(policy, self.episodes, self.seed + CHECKPOINT_SEEDS)))
        self.history.append((step, score))
        if score >= self.best_return:
            self.best_step, self.best_return, self.best = step, score, copy.deepcopy(policy)

    def fresh_returns(self, last: torch.nn.Module, episodes: int, stopped: bool) -> tuple[list[float], list[float]]:
        """Greedy returns on EPISODES fresh episodes of the best checkpoint and of the LAST policy; [NaN] for the
        best when no checkpoint was taken, and for the last when the run STOPPED (its weights are not finite)."""
        fresh = self.seed + FINAL_SEEDS
        best = evaluate(self.best, episodes, fresh) if self.best is not None else [math.nan]
        return best, evaluate(last, episodes, fresh) if not stopped else [math.nan]

    def note(self, what: str) -> str:
        """What the summary table's checkpoint columns and times mean; WHAT is the policy ("policy", "actor")."""
        return (f"a checkpoint is the {what} every {self.every:,} steps, scored on {self.episodes} greedy episodes; "
                f"the best is then reported on other episodes. wall s and env steps/s cover the training loop, "
                f"checkpoint evaluations included")


def after_best(best_mean: float, last_mean: float) -> str:
    """How the last policy fared against the best checkpoint on the same fresh episodes: "collapsed" when it scores
    under half the best's mean (RL on CartPole can forget what it learned), else "held"; "" when either is unknown."""
    if math.isnan(best_mean) or math.isnan(last_mean):
        return ""
    return "collapsed" if last_mean < best_mean / 2 else "held"


def collapse_note(what: str, best_step: int, best_mean: float, last_mean: float, total_steps: int) -> list[str]:
    """A note when WHAT collapsed after its best checkpoint: the claim judges the best, the table shows the last."""
    if after_best(best_mean, last_mean) != "collapsed":
        return []
    return [f"{what} collapsed after its best checkpoint: the last policy (step {total_steps:,}) scores "
            f"{last_mean:.1f} on the fresh episodes where the best (step {best_step:,}) scores {best_mean:.1f}. The "
            f"'learns' claim judges the best checkpoint, which is the policy you would keep"]


def window_edges(total_steps: int, windows: int) -> list[tuple[float, float]]:
    """The WINDOWS equal slices (lo, hi] of a run of TOTAL_STEPS environment steps."""
    return list(itertools.pairwise(np.linspace(0, total_steps, windows + 1)))


def window_label(lo: float, hi: float) -> str:
    return f"{int(lo) + 1}–{int(hi)}"


def window_means(episodes: list[tuple[int, float]], total_steps: int, windows: int) -> list[float]:
    """Mean return of the episodes that ended in each of WINDOWS equal slices of the run (NaN if none)."""
    out = []
    for lo, hi in window_edges(total_steps, windows):
        rets = [ret for step, ret in episodes if lo < step <= hi]
        out.append(float(np.mean(rets)) if rets else math.nan)
    return out
