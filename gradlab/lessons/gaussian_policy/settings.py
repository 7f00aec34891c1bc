"""The settings of `gradlab gaussian-policy`, each declared once (gradlab.kit.options). No torch here: `gradlab
gaussian-policy --help` reads this module."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from gradlab.errors import OptionError, check_option
from gradlab.kit import options as o
from gradlab.kit.options import FLOAT32_MAX

# σ's range: the σ-score ((a − μ)² − σ²)/σ³ needs σ³ and 1/σ³ finite in float32 (largest 3.4e38): |σ| within
# 1e±12 keeps them below 1e36
SIGMA_MIN, SIGMA_MAX = 1e-12, 1e12
MAX_EPOCHS = 10_000_000  # REINFORCE updates a run may ask for
MAX_SAMPLES = 1_000_000  # actions per update: 1e6 × a few dimensions is a few MB


def parse_list(text: str, name: str) -> list[float]:
    """The numbers of option NAME's TEXT, "0.3,-0.5": one per action dimension."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise OptionError(name, f"{text!r}: use comma-separated numbers, one per action dimension") from None
    check_option(all(math.isfinite(v) and abs(v) <= FLOAT32_MAX for v in values), name,
                 f"{text!r}: every number must be a finite float32 (at most {FLOAT32_MAX:.3g} in size): the lesson "
                 f"computes in float32", example="0.3,-0.5")
    return values


@dataclass
class Config(o.LessonConfig):
    """Settings of `gradlab gaussian-policy`; the seed draws the sampled actions."""

    mu: str = o.option("0.3,-0.5", "Policy mean μ, one number per action dimension.", listed=True)
    sigma: str = o.option("0.7,1.2", "Policy std σ > 0, one per dimension.", listed=True)
    action: str = o.option("", "The action a (default: sampled from N(μ, σ²) with --seed).", listed=True)
    optimum: str = o.option("1.5,-0.8", "The bandit's best action a*.", listed=True)  # reward −‖a − a*‖²
    epochs: int = o.epochs(300, "REINFORCE updates.", listed=True, bounds=o.between(1, MAX_EPOCHS))
    samples: int = o.option(64, "Actions sampled per update.")
    lr: float = o.adam_lr(0.05)  # for μ and ρ = ln σ
    tolerance: float = o.option(0.1, "The claim: learned μ within this distance of a*.",
                                bounds=o.positive(math.inf))

    cpu_only: ClassVar[str | None] = "a handful of numbers per step: a GPU would only add transfer latency"

    def __post_init__(self) -> None:
        super().__post_init__()  # the declared bounds
        mu, sigma, opt = parse_list(self.mu, "mu"), parse_list(self.sigma, "sigma"), parse_list(self.optimum, "optimum")
        check_option(all(SIGMA_MIN <= s <= SIGMA_MAX for s in sigma), "sigma",
                     f"{self.sigma!r}: σ must be between {SIGMA_MIN:g} and {SIGMA_MAX:g} in every dimension (the "
                     f"score's σ³ and 1/σ³ must be float32 numbers)", example="0.7,1.2")
        check_option(len(mu) == len(sigma) == len(opt), "optimum",
                     lambda say: f"{say('mu')}, {say('sigma')} and {say('optimum')} need one number per action "
                                 f"dimension; got {len(mu)}, {len(sigma)} and {len(opt)}")
        if self.action:
            action = parse_list(self.action, "action")
            check_option(len(action) == len(mu), "action",
                         lambda say: f"{say('action')} has {len(action)} numbers but {say('mu')} has {len(mu)}")
        check_option(2 <= self.samples <= MAX_SAMPLES, "samples",
                     f"must be between 2 (the baseline needs a batch) and {MAX_SAMPLES:,}, got {self.samples}",
                     example=64)
