"""The exercises of `gradlab dqn`, beside the submission: each exercise's inputs (CASES(seed)) and how a function is
called on them (the harness). The only code of the lesson that runs in the sandbox: torch and
gradlab.practice.harness, nothing else (no reference, no known mistake: those are in checks.py)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.practice.harness import Harness, loaded

# ------------------------------------------------------------------------------------------------------- td_loss

def _qnet(weights: list[torch.Tensor]) -> torch.nn.Module:
    return loaded(torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)), weights)


def _td_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)

    def weights():
        torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=g)))
        return [p.detach().clone() for p in torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(),
                                                                torch.nn.Linear(16, 2)).parameters()]

    out = []
    for label, n, p_done, gamma in (("32 transitions, some terminal", 32, 0.3, 0.99),
                                    ("every transition terminal", 16, 1.0, 0.99),
                                    ("none terminal (running, or truncated by the time limit)", 16, 0.0, 0.99),
                                    ("γ = 0", 8, 0.5, 0.0), ("one transition", 1, 0.0, 0.9)):
        out.append({"label": label, "kind": "td", "online": weights(), "target": weights(), "gamma": gamma,
                    "s": torch.randn(n, 4, generator=g), "s2": torch.randn(n, 4, generator=g),
                    "a": torch.randint(0, 2, (n,), generator=g), "r": torch.randint(0, 2, (n,), generator=g).float(),
                    "done": (torch.rand(n, generator=g) < p_done).float()})
    return out


def _td_harness(fn: Callable, case: dict) -> dict:
    online, target = _qnet(case["online"]), _qnet(case["target"])
    loss = fn(online, target, case["s"], case["a"], case["r"], case["s2"], case["done"], case["gamma"])
    params = [*online.parameters(), *target.parameters()]
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    grads = [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads, strict=True)]
    k = len(list(online.parameters()))
    return {"loss": loss.detach().reshape(()), "online": grads[:k], "target": grads[k:]}


HARNESSES: dict[str, Harness] = {
    "td_loss": Harness(cases=_td_cases, call=_td_harness),
}
