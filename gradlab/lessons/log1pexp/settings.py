"""The settings of `gradlab log1pexp`, each declared once (gradlab.kit.options). No torch here: `gradlab log1pexp
--help` reads this module."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from gradlab.errors import OptionError, check_option
from gradlab.kit import options as o

DTYPE_NAMES = ("float32", "float64")


def _number(v: str) -> float:
    """One point of --x."""
    try:
        return float(v)
    except ValueError:
        raise OptionError("x", lambda say: f"{say('x')}: {v.strip()!r} is not a number; use comma-separated numbers "
                                           f"like '-100,0,100'") from None


@dataclass
class Config(o.LessonConfig):
    """Settings of `gradlab log1pexp` (nothing here is random: the seed is kept for the common options)."""

    x: str = o.option("-100,-20,0,20,88,89,100,1000", "Points at which to evaluate value and gradient "
                                                      "(comma-separated).", listed=True)
    dtype: str = o.option("both", "Floating-point type(s) of the table.", choices=(*DTYPE_NAMES, "both"),
                          listed="choices")

    cpu_only: ClassVar[str | None] = "the lesson is about CPU float32/float64 rounding at single points"

    def __post_init__(self) -> None:
        super().__post_init__()  # the declared bounds (the seed's)
        check_option(self.dtype in (*DTYPE_NAMES, "both"), "dtype",
                     lambda say: f"unknown {say('dtype')} {self.dtype!r}: use float32, float64 or both")
        xs = [_number(v) for v in self.x.split(",")]
        check_option(all(math.isfinite(v) for v in xs), "x", f"must be finite numbers, got {self.x!r}")

    def plot_unavailable(self) -> str | None:
        return "gradlab log1pexp prints a table of points and has no curves to plot; drop --plot"
