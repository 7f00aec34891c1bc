"""The settings of `gradlab mnist`, each declared once (gradlab.kit.options): the defaults are the tutorial's (see
configs/mnist-tutorial.toml). No torch here: `gradlab mnist --help` reads this module."""

from __future__ import annotations

from dataclasses import dataclass

from gradlab.errors import check_option
from gradlab.kit import options as o

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
    lr: float = o.option(0.01, "Learning rate of W ← W − lr·∂cost/∂W.", listed=True, bounds=o.positive())
    batch_size: int = o.batch_size(100)
    train_size: int = o.train_size()  # the tutorial kept 5,000 back
    test_size: int = o.test_size()
    shuffle: bool = o.shuffle()

    def __post_init__(self) -> None:
        check_option(self.variant in MODES, "variant",  # set by a flag group: no --variant to name
                     lambda _: f"unknown variant {self.variant!r}: use one of {', '.join(MODES)}")
        super().__post_init__()  # the declared bounds
