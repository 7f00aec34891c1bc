"""The inputs of every exercise are the same whichever thread draws them, and whatever other threads do meanwhile.
gradlab grades two submissions at once and computes each one's references in a thread of its own process, while the
sandbox draws the same inputs alone: an input that depended on torch's global generator (seeded, then a model made)
was now and then drawn after another thread's draws, and a right answer (ddp.accumulated_grad's, dqn's) failed on
inputs the sandbox had never seen (found by folder mode: `gradlab check FOLDER` with two right answers, 1 run in 2)."""

from __future__ import annotations

import threading

import torch

from gradlab.practice import all_exercises, checks_of
from gradlab.practice.judging.diagnosis import flat

SEED = 3


def _tensors(cases: list[dict]) -> list[torch.Tensor]:
    """Every tensor of the inputs, in order (their labels and sizes are constants, drawn from nothing)."""
    return [t for t in flat(cases) if isinstance(t, torch.Tensor)]


def test_every_exercises_inputs_are_drawn_the_same_beside_busy_threads():
    names = [n for n in all_exercises() if "." in n and not n.split(".")[0].endswith("_graded")]
    alone = {n: _tensors(checks_of(all_exercises()[n]).harness.cases(SEED)) for n in names}
    stop = threading.Event()

    def churn() -> None:  # what the other threads of gradlab do: make modules, draw from torch's global generator
        while not stop.is_set():
            torch.nn.Linear(16, 16)
            torch.randn(64)

    busy = [threading.Thread(target=churn, daemon=True) for _ in range(2)]
    for t in busy:
        t.start()
    try:
        for _ in range(3):
            for n in names:
                again = _tensors(checks_of(all_exercises()[n]).harness.cases(SEED))
                assert len(again) == len(alone[n]) and all(torch.equal(a, b) for a, b in zip(again, alone[n],
                                                                                             strict=True)), n
    finally:
        stop.set()
        for t in busy:
            t.join()
