"""The exercises of `gradlab actor-critic`, beside the submission: each exercise's inputs (CASES(seed)) and how a
function is called on them (the harness). The only code of the lesson that runs in the sandbox: torch and
gradlab.kit.harness, nothing else (no reference, no known mistake: those are in checks.py).

The inputs come in families that vary one thing: the same transitions with no terminal one and with every one
terminal; one transition or a batch."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.kit.harness import Harness, Returned, loaded, tensor_out

SHAPES = ((16, 4), (16,), (1, 16), (1,))
ACTOR = ((16, 4), (16,), (2, 16), (2,))


def _critic(weights: list[torch.Tensor]) -> torch.nn.Module:
    return loaded(torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)), weights)


def _actor(weights: list[torch.Tensor]) -> torch.nn.Module:
    return loaded(torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2)), weights)


def _cases(seed: int, steps: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    weights = [torch.randn(shape, generator=g) * 0.3 for shape in SHAPES]
    actor = [torch.randn(shape, generator=g) * 0.3 for shape in ACTOR]

    def batch(n: int, p_done: float) -> dict:
        return {"s": torch.randn(steps, n, 4, generator=g), "s2": torch.randn(steps, n, 4, generator=g),
                "r": torch.ones(steps, n), "a": torch.randint(0, 2, (steps, n), generator=g),
                "done": (torch.rand(steps, n, generator=g) < p_done).float()}

    def case(label: str, data: dict, **more) -> dict:
        return {"label": label, "kind": "critic" if steps > 1 else "actor", "weights": weights, "actor": actor,
                "gamma": 0.99, "stale": [torch.randn(w.shape, generator=g) for w in weights], **data, **more}

    n = f"{steps} update{'s' * (steps > 1)} of"
    out = [case(f"{n} 32 transitions, some terminal", batch(32, 0.2))]
    data = batch(8, 0.0)
    out.append(case(f"{n} 8 transitions, none terminal", data, family="terminal",
                    vary="for non-terminal transitions"))
    # r is 1 everywhere (CartPole's reward), so on this twin every target is 1: a mistake that only a varying target
    # shows is right here too, whatever the done mask does; the family's words say so (#45)
    out.append(case("the same, every one terminal", {**data, "done": torch.ones_like(data["done"])},
                    family="terminal", vary="for terminal ones (there every target is r = 1, one number for all)"))
    out.append(case(f"{n} one transition (the first of the 8)", {k: v[:, :1] for k, v in data.items()},
                    family="size", vary="for one transition"))
    out.append(case("the 8 again (the first is the one above)", data, family="size", vary="for a batch"))
    return out


# ------------------------------------------------------------------------------------------------- critic_update

def _torch_rmsprop(params) -> torch.optim.Optimizer:
    # torch's RMSprop, not gradlab.kit.optim.TFRMSprop: what is checked is how the gradients reach .grad, which does not
    # depend on the algorithm, and this file imports torch and gradlab.kit.harness only (it runs in the sandbox)
    return torch.optim.RMSprop(params, lr=0.01, alpha=0.99, eps=1e-5)


def _critic_harness(fn: Callable, case: dict, optimizer_for: Callable = _torch_rmsprop) -> dict:
    """FN's three updates of the critic on CASE, with the optimizer OPTIMIZER_FOR(parameters) makes (gradlab's side
    computes its references and known mistakes with the same update written out: checks.py)."""
    critic = _critic(case["weights"])
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
        got = fn(critic, optimizer, case["s"][k], case["r"][k], case["s2"][k], case["done"][k], case["gamma"])
        if got is not None and not isinstance(got, torch.Tensor):
            raise Returned(f"critic_update returned {type(got).__name__}: it updates the critic in place and "
                           "returns nothing")
        out[f"_steps {k + 1}"] = torch.tensor(float(len(steps)))  # step() calls so far
        out[f"grad {k + 1}"] = [t.clone() for t in given]
        out[f"params {k + 1}"] = [p.detach().clone() for p in params]
    return out


# ---------------------------------------------------------------------------------------------------- actor_loss

def _actor_harness(fn: Callable, case: dict) -> dict:
    actor, critic = _actor(case["actor"]), _critic(case["weights"])
    loss = tensor_out(fn(actor, critic, case["s"][0], case["a"][0], case["r"][0], case["s2"][0], case["done"][0],
                         case["gamma"]), "what actor_loss returned")
    if loss.numel() != 1:
        raise Returned(f"the loss is a tensor of shape {tuple(loss.shape)}: reduce it to one number (the mean over "
                       "the transitions)")
    params = [*actor.parameters(), *critic.parameters()]
    grads = torch.autograd.grad(loss, params, allow_unused=True) if loss.requires_grad else [None] * len(params)
    grads = [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads, strict=True)]
    return {"loss": loss.detach().reshape(()), "actor": grads[:4], "critic": grads[4:]}


HARNESSES: dict[str, Harness] = {
    "actor_loss": Harness(cases=lambda seed: _cases(seed, 1), call=_actor_harness),
    "critic_update": Harness(cases=lambda seed: _cases(seed, 3), call=_critic_harness),
}
