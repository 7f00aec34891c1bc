"""The exercises of `gradlab dqn`, beside the submission: each exercise's inputs (CASES(seed)) and how a function is
called on them (the harness). The only code of the lesson that runs in the sandbox: torch and
gradlab.kit.harness, nothing else (no reference, no known mistake: those are in checks.py).

The inputs come in families that vary one thing: the same transitions with no terminal one and with every one
terminal, one transition or a batch."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.kit.harness import Harness, Returned, default_init, loaded, tensor_out


def _qnet(weights: list[torch.Tensor]) -> torch.nn.Module:
    return loaded(torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)), weights)


def _td_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)

    def weights():
        return default_init(torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)),
                            torch.Generator().manual_seed(int(torch.randint(0, 2**31, (1,), generator=g))))

    def transitions(n: int, p_done: float) -> dict:
        return {"s": torch.randn(n, 4, generator=g), "s2": torch.randn(n, 4, generator=g),
                "a": torch.randint(0, 2, (n,), generator=g), "r": torch.randint(0, 2, (n,), generator=g).float(),
                "done": (torch.rand(n, generator=g) < p_done).float()}

    out = []
    for label, n, p_done, gamma in (("32 transitions, some terminal", 32, 0.3, 0.99), ("γ = 0", 8, 0.5, 0.0)):
        out.append({"label": label, "kind": "td", "online": weights(), "target": weights(), "gamma": gamma,
                    **transitions(n, p_done)})
    nets, t = {"online": weights(), "target": weights()}, transitions(16, 0.0)
    out.append({"label": "16 transitions, none terminal (running, or truncated by the time limit)", "kind": "td",
                **nets, "gamma": 0.99, **t, "family": "terminal", "vary": "for non-terminal transitions"})
    out.append({"label": "the same 16, every one terminal", "kind": "td", **nets, "gamma": 0.99,
                **{**t, "done": torch.ones(16)}, "family": "terminal", "vary": "for terminal ones"})
    nets, t = {"online": weights(), "target": weights()}, transitions(8, 0.0)
    out.append({"label": "one transition (non-terminal)", "kind": "td", **nets, "gamma": 0.9,
                **{k: v[:1] for k, v in t.items()}, "family": "size", "vary": "for one transition"})
    out.append({"label": "8 transitions (the first is the one above)", "kind": "td", **nets, "gamma": 0.9, **t,
                "family": "size", "vary": "for a batch"})
    return out


# ------------------------------------------------------------------------------------------------------ td_target

def _target_harness(fn: Callable, case: dict) -> dict:
    target = _qnet(case["target"])
    y = tensor_out(fn(target, case["r"], case["s2"], case["done"], case["gamma"]), "what td_target returned")
    return {"y": y.detach(), "_graph": torch.tensor(float(y.requires_grad))}


# ------------------------------------------------------------------------------------------------------- td_loss

def _td_harness(fn: Callable, case: dict) -> dict:
    online, target = _qnet(case["online"]), _qnet(case["target"])
    loss = tensor_out(fn(online, target, case["s"], case["a"], case["r"], case["s2"], case["done"], case["gamma"]),
                      "what td_loss returned")
    if loss.numel() != 1:
        raise Returned(f"the loss is a tensor of shape {tuple(loss.shape)}: reduce it to one number (the mean over "
                       "the transitions, F.smooth_l1_loss's default)")
    params = [*online.parameters(), *target.parameters()]
    # no graph at all: no gradient reaches anything (the diagnosis says so)
    grads = torch.autograd.grad(loss, params, allow_unused=True) if loss.requires_grad else [None] * len(params)
    grads = [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads, strict=True)]
    k = len(list(online.parameters()))
    return {"loss": loss.detach().reshape(()), "online": grads[:k], "target": grads[k:]}


HARNESSES: dict[str, Harness] = {
    "td_target": Harness(cases=_td_cases, call=_target_harness),
    "td_loss": Harness(cases=_td_cases, call=_td_harness),
}
