"""How actor_critic_graded.critic_update is called, and on which inputs: the only file of the exercise that runs
beside the student's code, so it imports torch and gradlab.kit.harness only (the reference is in checks.py).

Placed, not drawn, on every seed: a termination in the middle of a segment (in every environment), a last step that
terminates, one step (T = 1: there the n-step return is the one-step target), γ = 0."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.kit.harness import Harness, Returned, loaded

SHAPES = ((16, 4), (16,), (1, 16), (1,))
UPDATES = 3


def critic_of(weights: list[torch.Tensor]) -> torch.nn.Module:
    net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)).double()
    return loaded(net, weights)


class CenteredRMSProp:
    """TF-1's centered RMSProp with momentum, as training_ops.cc's ApplyCenteredRMSProp computes it:
        ms  += (g² − ms)(1 − ρ)      ms starts at ones
        mg  += (g − mg)(1 − ρ)       mg starts at zeros
        mom  = momentum · mom + lr · g / √(ms − mg² + ε)
        p   −= mom
    with the interface a critic update uses (param_groups, step, zero_grad); a parameter whose .grad is None is
    skipped. tests/test_graded_rl.py checks it against gradlab.kit.optim.TFRMSprop(centered=True)."""

    def __init__(self, params, lr: float = 0.01, decay: float = 0.9, momentum: float = 0.9, epsilon: float = 1e-10):
        self.params = list(params)
        self.param_groups = [{"params": self.params, "lr": lr, "decay": decay, "momentum": momentum,
                              "epsilon": epsilon}]
        self.slots = [(torch.ones_like(p), torch.zeros_like(p), torch.zeros_like(p)) for p in self.params]

    @torch.no_grad()
    def step(self, closure=None) -> None:
        group = self.param_groups[0]
        rho, lr, momentum, eps = group["decay"], group["lr"], group["momentum"], group["epsilon"]
        for p, (ms, mg, mom) in zip(self.params, self.slots, strict=True):
            if p.grad is None:
                continue
            g = p.grad
            ms.add_((g * g - ms) * (1 - rho))
            mg.add_((g - mg) * (1 - rho))
            mom.mul_(momentum).add_(lr * g / (ms - mg * mg + eps).sqrt())
            p.sub_(mom)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()


def _cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    weights = [torch.randn(shape, generator=g, dtype=torch.float64) * 0.3 for shape in SHAPES]

    def segments(T: int, n: int, p_done: float) -> dict:
        return {"s": torch.randn(UPDATES, T, n, 4, generator=g, dtype=torch.float64),
                "r": torch.randn(UPDATES, T, n, generator=g, dtype=torch.float64),
                "done": (torch.rand(UPDATES, T, n, generator=g) < p_done).double(),
                "s_last": torch.randn(UPDATES, n, 4, generator=g, dtype=torch.float64)}

    def case(label: str, data: dict, gamma: float = 0.9, **more) -> dict:
        return {"label": label, "kind": "critic", "weights": weights, "gamma": gamma,
                "stale": [torch.randn(w.shape, generator=g, dtype=torch.float64) for w in weights], **data, **more}

    out = [case("3 updates of 5 steps × 4 environments, some terminal", segments(5, 4, 0.2))]
    d = segments(5, 4, 0.0)
    out.append(case("3 updates of 5 steps × 4 environments, none terminal", d, family="terminal",
                    vary="with no termination"))
    mid = d["done"].clone()
    mid[:, 2] = 1.0
    out.append(case("the same, every environment terminating at step 3 of 5", {**d, "done": mid}, family="terminal",
                    vary="with a termination in the middle of the segment"))
    last = d["done"].clone()
    last[:, -1] = 1.0
    out.append(case("the same, the last step terminating (no bootstrap)", {**d, "done": last}))
    d = segments(6, 3, 0.2)
    one = {"s": d["s"][:, :1], "r": d["r"][:, :1], "done": d["done"][:, :1], "s_last": d["s"][:, 1]}
    out.append(case("3 updates of one step (T = 1) × 3 environments", one, family="length", vary="for one step"))
    out.append(case("3 updates of 6 steps (the first step is the one above)", d, family="length",
                    vary="for several steps"))
    out.append(case("γ = 0: each target is its reward", segments(4, 4, 0.2), gamma=0.0))
    return out


def call(fn: Callable, case: dict, optimizer_for: Callable = CenteredRMSProp) -> dict:
    """FN's updates of the critic on CASE, one per segment, each with the same optimizer."""
    critic = critic_of(case["weights"])
    optimizer = optimizer_for(critic.parameters())
    params = list(critic.parameters())
    for p, stale in zip(params, case["stale"], strict=True):
        p.grad = stale.clone()  # what .grad holds from the last update
    given: list = []
    step = optimizer.step

    steps: list = []

    def watched_step(*args, **kwargs):  # the gradients the optimizer is given: what the exercise asks for
        given[:] = [p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p) for p in params]
        steps.append(1)
        return step(*args, **kwargs)

    optimizer.step = watched_step
    out = {}
    for k in range(len(case["s"])):
        given[:] = [torch.zeros_like(p) for p in params]  # no step at all: the optimizer was given nothing
        got = fn(critic, optimizer, case["s"][k].clone(), case["r"][k].clone(), case["done"][k].clone(),
                 case["s_last"][k].clone(), case["gamma"])
        if got is not None and not isinstance(got, torch.Tensor):
            raise Returned(f"critic_update returned {type(got).__name__}: it updates the critic in place and "
                           "returns nothing")
        out[f"_steps {k + 1}"] = torch.tensor(float(len(steps)))  # step() calls so far
        out[f"grad {k + 1}"] = [t.clone().double() for t in given]
        out[f"params {k + 1}"] = [p.detach().clone().double() for p in params]
    return out


HARNESSES = {"critic_update": Harness(cases=_cases, call=call)}
