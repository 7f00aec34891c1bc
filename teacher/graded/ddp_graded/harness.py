"""How ddp_graded.accumulate is called, and on which inputs: the only file of the exercise that runs beside the
student's code, so it imports torch and gradlab.kit.harness only (the reference is in checks.py).

Every case puts a different number of counted targets in each part (the padding, −100, is placed, not drawn), so
that dividing by B, or by each part's own count, cannot pass on any seed; one case has a part of padding only."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.kit.harness import Harness, Returned, loaded, tensor_list

PAD = -100  # F.cross_entropy's ignore_index
SHAPES = ((16, 20), (16,), (5, 16), (5,))


def model_of(weights: list[torch.Tensor]) -> torch.nn.Module:
    net = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.ReLU(), torch.nn.Linear(16, 5)).double()
    return loaded(net, weights)


def _cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    weights = [torch.randn(shape, generator=g, dtype=torch.float64) * 0.3 for shape in SHAPES]

    def data(padded: list[range]) -> dict:
        y = torch.randint(0, 5, (40,), generator=g)
        for span in padded:
            y[span.start:span.stop] = PAD
        return {"weights": weights, "x": torch.randn(40, 20, generator=g, dtype=torch.float64), "y": y,
                "stale": [torch.randn(w.shape, generator=g, dtype=torch.float64) for w in weights]}

    def case(label: str, sizes: list[int], d: dict, **more) -> dict:
        return {"label": label, "kind": "acc", "sizes": sizes, **d, **more}

    out = [case("2 parts of 20, 12 and 2 of their targets padding", [20, 20], data([range(0, 12), range(20, 22)])),
           case("unequal parts 3/29/8, padding in each", [3, 29, 8], data([range(1, 2), range(10, 24), range(33, 35)])),
           case("parts 10/10/20, the first padding only", [10, 10, 20], data([range(0, 10), range(25, 28)])),
           case("one part of 40, 9 targets padding", [40], data([range(5, 14)]))]
    d = data([])
    out.append(case("4 parts of 10, no padding", [10, 10, 10, 10], d, family="padding", vary="without padding"))
    y = d["y"].clone()
    y[0:7], y[22:24] = PAD, PAD
    out.append(case("the same batch, 9 of its targets padding", [10, 10, 10, 10], {**d, "y": y}, family="padding",
                    vary="with padding"))
    return out


def _call(fn: Callable, case: dict) -> dict:
    model = model_of(case["weights"])
    for p, stale in zip(model.parameters(), case["stale"], strict=True):
        p.grad = stale.clone()  # what .grad holds on entry
    seen: list[int] = []
    model.register_forward_pre_hook(lambda module, args: seen.append(len(args[0])) if args else None)
    grads = tensor_list(fn(model, case["x"].clone(), case["y"].clone(), list(case["sizes"])),
                        "what accumulate returned", 4)
    largest = max(case["sizes"])
    if max(seen, default=0) > largest:  # the contract: one part at a time (the whole batch does not fit in memory)
        raise Returned(f"the model ran on {max(seen)} samples at once, more than the largest part ({largest}): "
                       "accumulation runs it on each part x.split(sizes) on its own")
    return {"grads": [t.detach().clone().double() for t in grads]}


HARNESSES = {"accumulate": Harness(cases=_cases, call=_call)}
