"""What every exercise's harness shares. A harness (gradlab/lessons/<lesson>/exercises/harness.py) makes an exercise's
inputs and calls a function on them the way the lesson uses it; it is the only code of an exercise that runs beside
a submission, so it imports torch and this module, nothing else of gradlab (no reference, no known mistake)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Harness:
    cases: Callable[[int], list[dict]]  # seed -> the inputs: [{"label", "kind", tensors…}]
    call: Callable[[Callable, dict], dict]  # (a function, one input) -> its outputs {name: tensor or [tensors]}


def loaded(net: torch.nn.Module, weights: list[torch.Tensor]) -> torch.nn.Module:
    """NET with its parameters set to WEIGHTS (an input carries tensors, not modules)."""
    with torch.no_grad():
        for p, w in zip(net.parameters(), weights, strict=True):
            p.copy_(w)
    return net
