"""The settings of `gradlab clip`, each declared once (gradlab.kit.options); configs/clip-tutorial.toml runs the
tutorial's model with clipping. No torch here: `gradlab clip --help` reads this module."""

from __future__ import annotations

from dataclasses import dataclass

from gradlab.errors import check_option
from gradlab.kit import options as o

MODES = ("global-norm", "norm", "value", "none")
MODELS = ("mlp", "softmax")


@dataclass
class Config(o.LessonConfig):
    """Settings of `gradlab clip`; the seed orders the batches and draws the mlp's initial weights."""

    clip: str = o.option("global-norm", "How to process the gradients between compute and apply.", choices=MODES,
                         listed="choices")
    clip_norm: float = o.option(1.0, "Cap on the (global) norm.", listed=True,  # for global-norm and norm
                                bounds=o.positive())
    clip_value: float = o.option(0.05, "Cap on each element (--clip value).", bounds=o.positive())
    compare: bool = o.option(True, "Also train without clipping, same batches and init, side by side.",
                             flag="--compare/--no-compare", listed=True)
    model: str = o.option("mlp", "mlp (784→256→256→10, gradients explode at large lr) or the tutorial's softmax "
                                 "(zero init).", choices=MODELS, listed=True)
    epochs: int = o.epochs(3)
    lr: float = o.option(2.0, "Learning rate (large on purpose: the unclipped mlp blows up).", listed=True,
                         bounds=o.positive())
    batch_size: int = o.batch_size(100)
    train_size: int = o.train_size()
    test_size: int = o.test_size()
    shuffle: bool = o.shuffle()

    def __post_init__(self) -> None:
        check_option(self.clip in MODES, "clip",
                     lambda say: f"unknown {say('clip')} mode {self.clip!r}: use one of {', '.join(MODES)}")
        check_option(self.model in MODELS, "model",
                     lambda say: f"unknown {say('model')} {self.model!r}: use one of {', '.join(MODELS)}")
        super().__post_init__()  # the declared bounds
