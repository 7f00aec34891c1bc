"""The lessons, in teaching order: the one registry that names them. It imports nothing heavy (the settings modules
are torch-free): `gradlab --help`, `gradlab list` and every lesson's `--help` read it.

A lesson is two modules. `<module>_config.py` declares its settings once: a Config dataclass whose fields carry
their help and flags (gradlab.settings), checked in its __post_init__. `<module>.py` is the lesson itself, with the
math in its docstring, and provides what `Lesson` below names: Config, run(config, ...) -> Result and EXPLAIN.
To add a lesson: write the two modules and add a LessonInfo here.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from gradlab import settings
from gradlab.lessons import (
    actor_critic_config,
    clip_config,
    ddp_config,
    dqn_config,
    gaussian_policy_config,
    jacobian_config,
    log1pexp_config,
    mnist_config,
)


@runtime_checkable
class Lesson(Protocol):
    """What a lesson module provides (checked for every lesson by tests/test_classroom.py)."""

    Config: type[settings.LessonConfig]  # its settings (from its _config module)
    EXPLAIN: tuple[str, ...]  # the functions and classes whose source `--explain` prints next to the math
    run: Callable[..., Any]  # run(config, [data,] device=, progress=) -> Result; pure: no printing


@dataclass(frozen=True)
class LessonInfo:
    name: str  # the subcommand
    module: str  # gradlab.lessons.<module>
    config: type[settings.LessonConfig]  # its settings: the options of its command
    idea: str  # the TF-1 tutorial idea it reproduces
    short_help: str  # its line in `gradlab --help`
    help: str  # its `--help` text
    needs_data: bool = False  # trains on MNIST-like images: --dataset --data-dir --offline
    dataset_default: str = "auto"
    # arguments for `gradlab all --quick` (and `--quick`): small budgets that still hold every claim. dqn keeps its
    # default 30,000 steps: its learning claim failed on 1 of 10 seeds at 20,000 steps (bench/bench_seeds.py --extra)
    quick: tuple[str, ...] = ()
    full: tuple[str, ...] = ()  # arguments for `gradlab all`
    list_note: str = ""  # said after its main options in `gradlab list`

    @functools.cached_property
    def specs(self) -> list[settings.Spec]:
        """Every option of its command, in --help order (read once from the Config's fields)."""
        return settings.lesson_specs(self.config, self.needs_data, self.dataset_default)

    @property
    def options(self) -> str:
        """Its main options, as `gradlab list` shows them."""
        return settings.listed(self.specs) + (f"; {self.list_note}" if self.list_note else "")

    def load(self) -> Lesson:
        """The lesson module (imports torch)."""
        import warnings

        # torch's own modules warn that torch.jit.script is deprecated when torch.func loads: not the user's concern
        warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.* is deprecated", category=FutureWarning)
        module = importlib.import_module(f"gradlab.lessons.{self.module}")
        assert isinstance(module, Lesson) and module.Config is self.config, f"{self.module} is not a lesson"
        return module


LESSONS: dict[str, LessonInfo] = {info.name: info for info in [
    LessonInfo(
        "mnist", "mnist", mnist_config.Config,
        "optimizer.minimize(cost) ≡ tf.gradients + W.assign(W − lr·grad) ≡ the gradient derived by hand",
        "Softmax regression on MNIST: optimizer step vs manual gradient step vs analytic gradient.",
        """Train softmax regression on MNIST three ways and prove they are the same gradient descent.

        The TF-1 tutorial: `GradientDescentOptimizer(lr).minimize(cost)` equals `tf.gradients` then
        `W.assign(W - lr * grad)`. Defaults are the tutorial's (configs/mnist-tutorial.toml).
        """,
        needs_data=True, quick=("--dataset", "mnist-sample", "--offline", "--epochs", "3")),
    LessonInfo(
        "clip", "clip", clip_config.Config,
        "compute_gradients → clip_by_global_norm → apply_gradients",
        "Compute → process → apply gradients: clipping by global norm tames exploding gradients.",
        """Train with compute_gradients → clip_by_global_norm → apply_gradients, and without, side by side.

        Shows that the three explicit steps equal backward(); step(), that our global-norm formula equals
        torch.nn.utils.clip_grad_norm_, and what clipping does to a network whose gradients explode.
        The tutorial's plain setting: --config configs/clip-tutorial.toml.
        """,
        needs_data=True, quick=("--dataset", "mnist-sample", "--offline", "--epochs", "2")),
    LessonInfo(
        "jacobian", "jacobian", jacobian_config.Config,
        "tf.gradients of a non-scalar sums over outputs; full Jacobians; Hessians by nesting",
        "Jacobians and Hessians: why grad of a non-scalar sums, full Jacobians five ways, nesting.",
        """W = log softmax(X y): the summed gradient TF returned, the full Jacobian, and the Hessian.

        Compares a Python loop over outputs, torch.autograd.functional.jacobian, torch.func.jacrev/jacfwd and
        vmap of a vector-Jacobian product against the closed form (e_i − p) yᵀ; the Hessian by jacfwd(jacrev),
        torch.func.hessian and autograd.functional.hessian against finite differences.
        """,
        full=("--scaling",)),
    LessonInfo(
        "log1pexp", "log1pexp", log1pexp_config.Config,
        "@tf.custom_gradient: log(1 + exp(x)) has a NaN gradient at x = 100 in float32",
        "Custom gradients: log(1+exp(x)) has a NaN gradient at x=100 in float32; fix it right.",
        """log(1 + eˣ) five ways: naive, a torch.where guard, the tutorial's custom gradient, a stable
        torch.autograd.Function, and F.softplus, beside the exact answer; gradcheck and gradgradcheck.
        """),
    LessonInfo(
        "gaussian-policy", "gaussian_policy", gaussian_policy_config.Config,
        "a custom-gradient layer for a Gaussian policy's score function, trained with REINFORCE",
        "A custom-gradient layer for a Gaussian policy's score, trained with REINFORCE.",
        """∂ln π/∂μ = (a−μ)/σ², ∂ln π/∂σ = ((a−μ)²−σ²)/σ³ as a custom backward, checked against
        torch.distributions.Normal and gradcheck, then REINFORCE on a one-step bandit with a known optimum.
        """),
    LessonInfo(
        "dqn", "dqn", dqn_config.Config,
        "stop_gradient on the DQN target ≡ feeding it as a constant; what leaks without it",
        "stop_gradient on the DQN target (CartPole): detach ≡ placeholder; without it, gradients leak.",
        """A small DQN on CartPole-v1: gradient anatomy of the target on one fixed batch, then training.

        Claims: placeholder ≡ stop-grad (bitwise, in the anatomy and over a whole training run); without
        stop-grad the gradient reaches the target network, and with no target network the update changes.
        """,
        full=("--compare",)),
    LessonInfo(
        "actor-critic", "actor_critic", actor_critic_config.Config,
        "a critic trained from tf.gradients + RMSProp.apply_gradients; get/set all parameters",
        "A critic trained from explicit gradients with RMSProp; get/set parameters.",
        """One-step actor-critic on CartPole-v1; the critic's gradients are computed with autograd.grad, written
        into .grad and applied by RMSprop, as the tutorial's tf.gradients + apply_gradients. Claims: explicit ≡
        backward (bitwise), and a critic copied through a flat parameter vector or a state_dict gives identical
        outputs.
        """,
        quick=("--total-steps", "60000")),
    LessonInfo(
        "ddp", "ddp", ddp_config.Config,
        "beyond the tutorials: one batch's gradient split over micro-batches and over workers (all-reduce)",
        "One batch's gradient, split: accumulation and data-parallel all-reduce (torch.distributed).",
        """Split one global batch over time (gradient accumulation) and over processes (data parallel with
        torch.distributed), and prove every split gives the full-batch gradient, or by how much it does not.

        gradlab starts --workers processes itself; under `torchrun --nproc-per-node N -m gradlab ddp` it joins
        torchrun's job instead, and rank 0 alone prints and writes files.
        """,
        needs_data=True, dataset_default="mnist-sample", quick=("--steps", "10"),
        list_note="torchrun -m gradlab ddp"),
]}


def index() -> list[dict[str, str]]:
    """Every lesson in teaching order: {"name", "idea", "options"} (the rows of `gradlab list`)."""
    return [{"name": i.name, "idea": i.idea, "options": i.options} for i in LESSONS.values()]


def measured_runtimes() -> dict:
    """gradlab/runtimes.json, written by `make runtimes` (bench/runtimes.py): measured, never typed by hand."""
    import json
    from pathlib import Path

    try:
        return json.loads((Path(__file__).resolve().parent.parent / "runtimes.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
