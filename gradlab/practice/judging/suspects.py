"""A hint that offers causes says only those an experiment confirms: each cause (gradlab.kit.exercise.Cause) is its
mistake applied to the reference, run on the same inputs as the student's answer; it is said when its outputs
reproduce the student's on every input, and when none does, the hint says which were ruled out. Two causes that
both reproduce them are said as what the values cannot tell apart. A student is never sent to look for a cause
their values rule out (#45); one that, alone, does not give them is said as such, since two mistakes in one file
can give values neither gives alone."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping

import torch

from gradlab.kit.exercise import Cause, Checks, Suspects, values
from gradlab.kit.measure import MATCHES, flat

CONFIRMED = "measured: applied to the reference, it gives your values on every input"
BOTH = "measured: each, applied to the reference, gives your values on every input, so they cannot be told apart here"
# none confirmed: each alone is ruled out, not a combination of them (a sum and another action's Q, both in one file)
RULED_OUT = "measured: applied alone to the reference"


def decided(checks: Checks, lab, mine: list[dict]) -> Checks:
    """CHECKS whose hints are sentences: each Suspects decided against the student's outputs MINE (one per input of
    LAB, value_relations.Lab: what a cause gives on each input, computed once), on first use (a hint never said
    runs no experiment)."""
    if not any(isinstance(h, Suspects) for h in checks.hints.values()):
        return checks
    return dataclasses.replace(checks, hints=_Decided(checks.hints, lab, mine))


class _Decided(Mapping):
    """The hints, a Suspects turned into its sentence when it is read."""

    def __init__(self, hints: dict, lab, mine: list[dict]) -> None:
        self._hints, self._lab, self._mine, self._said = hints, lab, mine, {}

    def __getitem__(self, key) -> str:
        hint = self._hints[key]
        if not isinstance(hint, Suspects):
            return hint
        if key not in self._said:
            self._said[key] = words(hint, [c for c in hint.causes if reproduces(self._lab, c, self._mine)])
        return self._said[key]

    def __iter__(self) -> Iterator:
        return iter(self._hints)

    def __len__(self) -> int:
        return len(self._hints)


def words(hint: Suspects, confirmed: list[Cause]) -> str:
    """The hint in words: its lead, then the confirmed causes (or, when none is, those ruled out alone)."""
    if len(confirmed) == 1:
        said = f"{confirmed[0].words} ({CONFIRMED})" + (f": {confirmed[0].fix}" if confirmed[0].fix else "")
    elif confirmed:
        fixes = list(dict.fromkeys(c.fix for c in confirmed if c.fix))
        said = f"{' or '.join(c.words for c in confirmed)} ({BOTH})" + (f": {'; '.join(fixes)}" if fixes else "")
    else:
        said = (f"{hint.causes[0].words} alone does not give your values ({RULED_OUT})" if len(hint.causes) == 1 else
                f"none of these gives your values alone ({RULED_OUT}, each): {'; '.join(c.words for c in hint.causes)}"
                "; two of them together, or another mistake, can")
    return f"{hint.lead}: {said}" if hint.lead else said


def reproduces(lab, cause: Cause, mine: list[dict]) -> bool:
    """Whether CAUSE's outputs are the student's on every input: the same shapes, non-finite on the same outputs, and
    equal where both are finite (to MATCHES, in units of max(1, |theirs|))."""
    for i, yours in enumerate(mine):
        theirs = lab.out(cause, i)
        if theirs is None:
            return False
        for key, t in values(theirs).items():
            a, b = flat(yours.get(key, [])), flat(t)
            if len(a) != len(b) or not all(_agree(x, y) for x, y in zip(a, b, strict=True)):
                return False
    return True


def _agree(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape:
        return False
    if not a.is_floating_point() or not b.is_floating_point():
        return bool(torch.equal(a, b))
    fa, fb = a.isfinite(), b.isfinite()
    if bool((~fa).any()) != bool((~fb).any()):
        return False
    both = fa & fb
    if not bool(both.any()):
        return True
    x, y = a[both].double(), b[both].double()
    return float((x - y).abs().max()) <= MATCHES * max(1.0, float(y.abs().max()))
