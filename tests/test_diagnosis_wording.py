"""What a diagnosis says is true and said once (#45, an independent judge's notes): a derivative at a kink is the
installed torch's, measured, never assumed."""

import re

import pytest
import torch
from inprocess import judged
from test_diagnosis import fn_of, said

KINKS = {"clamp(x, min=0)": lambda x: torch.clamp(x, min=0), "relu(x)": torch.relu, "|x|": torch.abs,
         "torch.maximum(x, 0)": lambda x: torch.maximum(x, torch.zeros_like(x))}


def slope_at_0(f) -> float:
    x = torch.zeros((), dtype=torch.float64, requires_grad=True)
    return float(torch.autograd.grad(f(x), x)[0])


@pytest.mark.parametrize("kink", ["torch.clamp(x, min=0)", "torch.relu(x)", "torch.where(x >= 0, x, 0.0)"])
def test_a_softplus_with_a_kink_is_told_its_measured_slope_at_0_and_this_torchs_kink_derivatives(kink):
    """max(x, 0) + log1p(exp(−|x|)) written with clamp, relu or a where whose x = 0 takes the x branch: the slope
    said is the student's, measured, and every kink derivative said is the installed torch's."""
    source = f"def softplus(x):\n    return {kink} + torch.log1p(torch.exp(-x.abs()))\n"
    fn = fn_of("log1pexp.softplus", source)
    text = said(judged("log1pexp.softplus", fn))
    theirs = slope_at_0(fn) + 0.0
    assert f"gradient there is {theirs:g} · dy" in text or "only at x = 0" in text, text
    stated = re.findall(r"d (" + "|".join(map(re.escape, KINKS)) + r")/dx = (-?\d+(?:\.\d+)?)", text)
    assert len(stated) == len(KINKS), text
    for name, value in stated:
        assert float(value) == slope_at_0(KINKS[name]), (name, value, text)
