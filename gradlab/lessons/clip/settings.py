"""The settings of `gradlab clip`, each declared once (gradlab.kit.options); configs/clip-tutorial.toml runs the
tutorial's model with clipping. No torch here: `gradlab clip --help` reads this module."""

from __future__ import annotations

from dataclasses import dataclass

from gradlab.errors import check
from gradlab.kit import options as o
from gradlab.kit.options import check_positive

MODES = ("global-norm", "norm", "value", "none")
MODELS = ("mlp", "softmax")


@dataclass
class Config(o.LessonConfig):
    """Settings of `gradlab clip`; the seed orders the batches and draws the mlp's initial weights."""

    clip: str = o.option("global-norm", "How to process the gradients between compute and apply.", choices=MODES,
                         listed="choices")
    clip_norm: float = o.option(1.0, "Cap on the (global) norm.", listed=True)  # for global-norm and norm
    clip_value: float = o.option(0.05, "Cap on each element (--clip value).")
    compare: bool = o.option(True, "Also train without clipping, same batches and init, side by side.",
                             flag="--compare/--no-compare", listed=True)
    model: str = o.option("mlp", "mlp (784→256→256→10, gradients explode at large lr) or the tutorial's softmax "
                                 "(zero init).", choices=MODELS, listed=True)
    epochs: int = o.epochs(3)
    lr: float = o.option(2.0, "Learning rate (large on purpose: the unclipped mlp blows up).", listed=True)
    batch_size: int = o.batch_size(100)
    train_size: int = o.train_size()
    test_size: int = o.test_size()
    shuffle: bool = o.shuffle()

    def __post_init__(self) -> None:
        check(self.clip in MODES, f"unknown --clip mode {self.clip!r}: use one of {', '.join(MODES)}")
        check(self.model in MODELS, f"unknown --model {self.model!r}: use one of {', '.join(MODELS)}")
        for name, v in (("--clip-norm", self.clip_norm), ("--clip-value", self.clip_value), ("--lr", self.lr)):
            check_positive(name, v, "1.0")
        check(self.epochs >= 1, f"--epochs must be at least 1, got {self.epochs}; try --epochs 3")
        check(self.batch_size >= 1, f"--batch-size must be at least 1, got {self.batch_size}")
        check(self.train_size >= 1, f"--train-size must be at least 1, got {self.train_size}")
        check(self.test_size >= 1, f"--test-size must be at least 1, got {self.test_size}")
