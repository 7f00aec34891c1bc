"""The settings of `gradlab mnist`, each declared once (gradlab.kit.options): the defaults are the tutorial's (see
configs/mnist-tutorial.toml). No torch here: `gradlab mnist --help` reads this module."""

from __future__ import annotations

from dataclasses import dataclass

from gradlab.errors import check
from gradlab.kit import options as o
from gradlab.kit.options import check_positive

VARIANTS = ("optimizer", "manual", "analytic")
MODES = ("compare", *VARIANTS)


@dataclass
class Config(o.LessonConfig):
    """Settings of `gradlab mnist`; the seed orders the batches (the weights start at zero)."""

    variant: str = o.flag_group(  # optimizer | manual | analytic | compare (all three on the same batches)
        "compare",
        ("--compare", "compare", "Run all three ways on the same batch order, side by side (default)."),
        ("--optimizer", "optimizer", "Only torch.optim.SGD: zero_grad / backward / step (TF: optimizer.minimize)."),
        ("--manual-grad", "manual", "Only torch.autograd.grad, then W -= lr * g (TF: tf.gradients + assign)."),
        ("--analytic", "analytic", "Only the hand-derived gradient xᵀ(p − y)/B; no autograd at all."),
        listed=True)
    epochs: int = o.epochs(10, listed=True)
    lr: float = o.option(0.01, "Learning rate of W ← W − lr·∂cost/∂W.", listed=True)
    batch_size: int = o.batch_size(100)
    train_size: int = o.train_size()  # the tutorial kept 5,000 back
    test_size: int = o.test_size()
    shuffle: bool = o.shuffle()

    def __post_init__(self) -> None:
        check(self.variant in MODES, f"unknown variant {self.variant!r}: use one of {', '.join(MODES)}")
        check(self.epochs >= 1, f"--epochs must be at least 1, got {self.epochs}; try --epochs 10")
        check_positive("--lr", self.lr, "0.01")
        check(self.batch_size >= 1, f"--batch-size must be at least 1, got {self.batch_size}; try --batch-size 100")
        check(self.train_size >= 1, f"--train-size must be at least 1, got {self.train_size}; try --train-size 55000")
        check(self.test_size >= 1, f"--test-size must be at least 1, got {self.test_size}; try --test-size 3000")
