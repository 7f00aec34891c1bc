"""Schedules named once (as nanoGPT's `get_lr(it)`): a value moved linearly from a start to an end over a span of
steps, which dqn's ε-greedy exploration and the RL lessons' learning-rate anneal both are."""

from __future__ import annotations

from typing import Any


def linear(start: float, end: float, step: int, span: int) -> float:
    """START at step 0, END at step SPAN and after, on the straight line between: dqn's ε from 1 to 0.04 over the
    first 16% of the run, a learning rate from lr to 0 over all of it."""
    return end + (start - end) * max(0.0, 1 - step / span)


def set_lr(optimizer: Any, lr: float) -> None:
    """Give every parameter group of OPTIMIZER (a torch optimizer) the learning rate LR."""
    for group in optimizer.param_groups:
        group["lr"] = lr
