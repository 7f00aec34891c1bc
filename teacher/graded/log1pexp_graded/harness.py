"""How Log1mExp is called, and on which inputs: the only file of the exercise that runs beside the student's code
(torch, the standard library and gradlab.kit.harness only; the reference is in checks.py).

Its outputs are logarithms: log(−f(x)), log(dy · f'(x)) and log(−dy · v · f''(x)) (dy and v positive, so each is the
log of a positive number), in float64 from the function's own values. An absolute difference of these is a relative
error of the number: f(80) ≈ −1.8e-35 in float32 is checked to its digits, not as "about 0"."""

import math

import torch

from gradlab.kit.harness import Harness, function_outputs

NEAR32 = [1e-7, 1e-6, 1e-5, 1e-4, 1e-3]
MID = [0.01, 0.1, 0.5, math.log(2), 0.7, 1.0, 2.0, 5.0]
FAR32 = [10.0, 17.0, 20.0, 30.0, 40.0, 60.0, 80.0]  # e^−80 is still a normal float32 (e^−88 is not)
NEAR64 = [1e-15, 1e-12, 1e-9, 1e-6, 1e-3]
FAR64 = [10.0, 20.0, 40.0, 100.0, 300.0, 700.0]  # e^−700 is still a normal float64 (e^−709 is not)


def _cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)

    def positive(n: int) -> torch.Tensor:  # dy and v: random, positive, never 1
        return torch.rand(n, generator=g, dtype=torch.float64) + 0.5

    out = []
    for label, points, dtype in (("x = 1e-7 … 1e-3, float32", NEAR32, torch.float32),
                                 ("x = 0.01 … 5, float32", MID, torch.float32),
                                 ("x = 10 … 80, float32", FAR32, torch.float32),
                                 ("x = 1e-15 … 1e-3, float64", NEAR64, torch.float64),
                                 ("x = 0.01 … 5, float64", MID, torch.float64),
                                 ("x = 10 … 700, float64", FAR64, torch.float64)):
        kind = "float32" if dtype == torch.float32 else "float64"
        out.append({"label": label, "kind": kind, "x": torch.tensor(points, dtype=dtype),
                    "dy": positive(len(points)).to(dtype), "v": positive(len(points)).to(dtype)})
    xr = torch.exp(torch.rand(40, generator=g, dtype=torch.float64) * 15 - 10)  # e^−10 … e^5
    out.append({"label": "random x in e^−10 … e^5, float64, dy = 1", "kind": "float64", "x": xr,
                "dy": torch.ones_like(xr), "v": positive(40), "family": "upstream", "vary": "when dy = 1"})
    out.append({"label": "the same x, random dy", "kind": "float64", "x": xr, "dy": positive(40), "v": positive(40),
                "family": "upstream", "vary": "for another upstream gradient dy"})
    return out


def _call(cls, case: dict) -> dict:
    got = function_outputs(cls, [case["x"]], case["dy"], [case["v"]], "Log1mExp")
    return {"log −value": torch.log(-got["value"].double()), "log gradient": torch.log(got["gradient"].double()),
            "log −second": torch.log(-got["second"].double())}


HARNESSES = {"Log1mExp": Harness(cases=_cases, call=_call)}
