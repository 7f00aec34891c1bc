"""The exercises of `gradlab actor-critic`, beside the submission: each exercise's inputs (CASES(seed)) and how a
function is called on them (the harness). The only code of the lesson that runs in the sandbox: torch and
gradlab.practice.harness, nothing else (no reference, no known mistake: those are in checks.py)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.practice.harness import Harness, loaded

# ------------------------------------------------------------------------------------------------- critic_update

def _critic(weights: list[torch.Tensor]) -> torch.nn.Module:
    return loaded(torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)), weights)


def _critic_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    weights = [torch.randn(shape, generator=g) * 0.3 for shape in ((16, 4), (16,), (1, 16), (1,))]
    out = []
    for label, n, p_done in (("3 updates of 32 transitions", 32, 0.2), ("3 updates, all terminal", 8, 1.0),
                             ("3 updates of one transition", 1, 0.0)):
        out.append({"label": label, "kind": "critic", "weights": weights, "gamma": 0.99,
                    "stale": [torch.randn(w.shape, generator=g) for w in weights],
                    "s": torch.randn(3, n, 4, generator=g), "s2": torch.randn(3, n, 4, generator=g),
                    "r": torch.ones(3, n), "done": (torch.rand(3, n, generator=g) < p_done).float()})
    return out


def _critic_harness(fn: Callable, case: dict) -> dict:
    critic = _critic(case["weights"])
    # torch's RMSprop, not gradlab.optim.TFRMSprop: what is checked is how the gradients reach .grad, which does not
    # depend on the algorithm, and this file imports torch and gradlab.practice.harness only (it runs in the sandbox)
    optimizer = torch.optim.RMSprop(critic.parameters(), lr=0.01, alpha=0.99, eps=1e-5)
    for p, stale in zip(critic.parameters(), case["stale"], strict=True):
        p.grad = stale.clone()  # what .grad holds from the last update
    for k in range(3):
        fn(critic, optimizer, case["s"][k], case["r"][k], case["s2"][k], case["done"][k], case["gamma"])
    return {"params": [p.detach().clone() for p in critic.parameters()]}


HARNESSES: dict[str, Harness] = {
    "critic_update": Harness(cases=_critic_cases, call=_critic_harness),
}
