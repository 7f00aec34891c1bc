"""How dqn_graded.td_loss is called, and on which inputs: the only file of the exercise that runs beside the student's
code, so it imports torch and gradlab.kit.harness only (the reference is in checks.py).

The inputs come in families that vary one thing, and three cases are placed on every seed: online ranks the actions
opposite to target at every s2 (its last layer's rows swapped: DQN's target differs from Double DQN's on every
transition that is not terminal), online ties the two actions at every s2 (its last layer's rows equal: the first
action is taken), online = target (just synced: there the two targets agree)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.kit.harness import Harness, Returned, loaded, tensor_out

SHAPES = ((16, 4), (16,), (2, 16), (2,))


def qnet(weights: list[torch.Tensor]) -> torch.nn.Module:
    net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)).double()
    return loaded(net, weights)


def _cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)

    def weights() -> list[torch.Tensor]:
        return [torch.randn(shape, generator=g, dtype=torch.float64) * 0.5 for shape in SHAPES]

    def transitions(n: int, p_done: float) -> dict:
        return {"s": torch.randn(n, 4, generator=g, dtype=torch.float64),
                "s2": torch.randn(n, 4, generator=g, dtype=torch.float64),
                "a": torch.randint(0, 2, (n,), generator=g),
                "r": torch.randint(0, 2, (n,), generator=g).double(),
                "done": (torch.rand(n, generator=g) < p_done).double()}

    def case(label: str, online: list, target: list, gamma: float, data: dict, **more) -> dict:
        return {"label": label, "kind": "td", "online": online, "target": target, "gamma": gamma, **data, **more}

    out = [case("32 transitions, some terminal", weights(), weights(), 0.99, transitions(32, 0.3)),
           case("γ = 0", weights(), weights(), 0.0, transitions(8, 0.5))]
    nets, t = (weights(), weights()), transitions(16, 0.0)
    out.append(case("16 transitions, none terminal", *nets, 0.99, t, family="terminal",
                    vary="for non-terminal transitions"))
    out.append(case("the same 16, every one terminal", *nets, 0.99, {**t, "done": torch.ones(16, dtype=torch.float64)},
                    family="terminal", vary="for terminal ones"))
    target, t = weights(), transitions(16, 0.2)
    out.append(case("online = target (just synced)", target, target, 0.9, t, family="sync",
                    vary="where online = target (just synced)"))
    out.append(case("the same 16, online ≠ target", weights(), target, 0.9, t, family="sync",
                    vary="where online ≠ target"))
    target = weights()
    swapped = [*target[:2], target[2].flip(0), target[3].flip(0)]  # online(x) = target(x) with its actions swapped
    out.append(case("online ranks the actions opposite to target at every s2", swapped, target, 0.9,
                    transitions(16, 0.2)))
    online = weights()
    tied = [*online[:2], online[2][:1].expand(2, 16).clone(), online[3][:1].expand(2).clone()]
    out.append(case("online values both actions the same at every s2 (a tie: the first action)", tied, weights(), 0.9,
                    transitions(16, 0.2)))
    nets, t = (weights(), weights()), transitions(8, 0.0)
    out.append(case("one transition (non-terminal)", *nets, 0.9, {k: v[:1] for k, v in t.items()}, family="size",
                    vary="for one transition"))
    out.append(case("8 transitions (the first is the one above)", *nets, 0.9, t, family="size", vary="for a batch"))
    return out


def _call(fn: Callable, case: dict) -> dict:
    online, target = qnet(case["online"]), qnet(case["target"])
    loss = tensor_out(fn(online, target, case["s"].clone(), case["a"].clone(), case["r"].clone(), case["s2"].clone(),
                         case["done"].clone(), case["gamma"]), "what td_loss returned")
    if loss.numel() != 1:
        raise Returned(f"the loss is a tensor of shape {tuple(loss.shape)}: reduce it to one number (the mean over "
                       "the transitions, F.smooth_l1_loss's default)")
    params = [*online.parameters(), *target.parameters()]
    grads = torch.autograd.grad(loss, params, allow_unused=True) if loss.requires_grad else [None] * len(params)
    grads = [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads, strict=True)]
    return {"loss": loss.detach().reshape(()).double(), "online": [t.double() for t in grads[:4]],
            "target": [t.double() for t in grads[4:]]}


HARNESSES = {"td_loss": Harness(cases=_cases, call=_call)}
