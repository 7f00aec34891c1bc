"""The lessons, in teaching order. This index imports nothing heavy: `gradlab list` and `--help` read it.

Each lesson module has a Config dataclass, `run(config, ...) -> Result` and EXPLAIN, the names of the functions
and classes whose source `--explain` prints next to the math.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass


@dataclass(frozen=True)
class LessonInfo:
    name: str  # the subcommand
    module: str  # gradlab.lessons.<module>
    idea: str  # the TF-1 tutorial idea it reproduces
    options: str  # its main options
    needs_data: bool  # trains on MNIST-like images
    # arguments for `gradlab all --quick`: small budgets that still hold every claim. dqn keeps its default 30,000
    # steps: its learning claim failed on 1 of 10 seeds at 20,000 steps (bench/bench_seeds.py --extra)
    quick: tuple[str, ...] = ()
    full: tuple[str, ...] = ()  # arguments for `gradlab all`


LESSONS: dict[str, LessonInfo] = {info.name: info for info in [
    LessonInfo("mnist", "mnist",
               "optimizer.minimize(cost) ≡ tf.gradients + W.assign(W − lr·grad) ≡ the gradient derived by hand",
               "--manual-grad --analytic --compare --epochs --lr --dataset",
               True, quick=("--dataset", "mnist-sample", "--offline", "--epochs", "3")),
    LessonInfo("clip", "clip",
               "compute_gradients → clip_by_global_norm → apply_gradients",
               "--clip global-norm|norm|value|none --clip-norm --compare --model --lr",
               True, quick=("--dataset", "mnist-sample", "--offline", "--epochs", "2")),
    LessonInfo("jacobian", "jacobian",
               "tf.gradients of a non-scalar sums over outputs; full Jacobians; Hessians by nesting",
               "--matrix --state --output --scaling", False,
               full=("--scaling",)),
    LessonInfo("log1pexp", "log1pexp",
               "@tf.custom_gradient: log(1 + exp(x)) has a NaN gradient at x = 100 in float32",
               "--x --dtype float32|float64|both", False),
    LessonInfo("gaussian-policy", "gaussian_policy",
               "a custom-gradient layer for a Gaussian policy's score function, trained with REINFORCE",
               "--mu --sigma --action --optimum --epochs", False),
    LessonInfo("dqn", "dqn",
               "stop_gradient on the DQN target ≡ feeding it as a constant; what leaks without it",
               "--stop-grad --placeholder --no-stop-grad --no-target-net --compare --total-steps",
               False, full=("--compare",)),
    LessonInfo("actor-critic", "actor_critic",
               "a critic trained from tf.gradients + RMSProp.apply_gradients; get/set all parameters",
               "--grad-mode explicit|backward --total-steps --envs", False, quick=("--total-steps", "60000")),
    LessonInfo("ddp", "ddp",
               "beyond the tutorials: one batch's gradient split over micro-batches and over workers (all-reduce)",
               "--workers --micro-batches --uneven --dtype --backend; torchrun -m gradlab ddp", True,
               quick=("--steps", "10")),
]}


def measured_runtimes() -> dict:
    """gradlab/runtimes.json, written by `make runtimes` (bench/runtimes.py): measured, never typed by hand."""
    import json
    from pathlib import Path

    try:
        return json.loads((Path(__file__).resolve().parent.parent / "runtimes.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


class _CallableIndex(types.ModuleType):
    """`gradlab.lessons()` is the public API's list of lessons, but once any lesson has run, the attribute
    gradlab.lessons is this subpackage: so the subpackage answers the call itself, the same way."""

    def __call__(self) -> list[dict[str, str]]:
        return [{"name": i.name, "idea": i.idea, "options": i.options} for i in LESSONS.values()]


sys.modules[__name__].__class__ = _CallableIndex
