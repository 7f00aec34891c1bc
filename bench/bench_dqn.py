"""Benchmark of `gradlab dqn`: environment steps/s of the training loop, and steps to reach return 475.

For each of 3 seeds, the stop-grad agent trains with the lesson's defaults but a larger budget; we print the
env steps/s of the whole loop (acting + learning), the first step at which the mean of the last 5 training
episodes reaches 475 (CartPole-v1's 'solved'), and the greedy evaluation return at the end. Printed, not
asserted. For reference, a well-known single-file DQN reports about 489 on CartPole-v1 after 500,000 steps.
"""

from __future__ import annotations

import os

import numpy as np
import torch
from rich.console import Console
from rich.table import Table

from gradlab.lessons import dqn as D

SEEDS = (0, 1, 2)
BUDGET = 50_000


def steps_to(episodes: list[tuple[int, float]], level: float, last: int = 5) -> int | None:
    returns = [r for _, r in episodes]
    for i in range(last - 1, len(episodes)):
        if np.mean(returns[i - last + 1:i + 1]) >= level:
            return episodes[i][0]
    return None


def main() -> None:
    console = Console(highlight=False)
    console.print(f"bench dqn: CartPole-v1, {BUDGET:,} steps per seed, torch {torch.__version__}, "
                  f"{torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.2f}")
    table = Table(title="stop-grad DQN, lesson defaults", title_justify="left")
    for col in ("seed", "env steps/s", "steps to 475 (mean of 5 episodes)", "greedy return at 30k", "at 50k"):
        table.add_column(col, justify="right")
    for seed in SEEDS:
        short = D.train(D.Config(seed=seed))  # the lesson's default budget (30,000 steps)
        long = D.train(D.Config(seed=seed, total_steps=BUDGET))
        reached = steps_to(long["episodes"], 475)
        table.add_row(str(seed), f"{long['steps_per_s']:,.0f}", f"{reached:,}" if reached else "not reached",
                      f"{np.mean(D.evaluate(short['online'], 10, seed)):.1f}",
                      f"{np.mean(D.evaluate(long['online'], 10, seed)):.1f}")
    console.print(table)


if __name__ == "__main__":
    main()
