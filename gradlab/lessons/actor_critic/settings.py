"""The settings of `gradlab actor-critic`, each declared once (gradlab.kit.options). No torch here: `gradlab
actor-critic --help` reads this module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from gradlab.errors import check_option
from gradlab.kit import options as o
from gradlab.kit.options import MAX_ENV_STEPS

GRAD_MODES = ("explicit", "backward")
OPTIMIZERS = ("tf1-rmsprop", "torch-rmsprop")  # TF-1's RMSPropOptimizer (gradlab.kit.optim.TFRMSprop), torch's RMSprop


@dataclass
class Config(o.LessonConfig):
    """Settings of `gradlab actor-critic`; the seed drives the environments and the networks. The networks' width
    and the table's windows have no option (gradlab.lessons.actor_critic.settings.Config(...) takes them)."""

    grad_mode: str = o.option("explicit", "explicit: autograd.grad → .grad → optimizer.step() (the tutorial); "
                                          "backward: loss.backward().", choices=GRAD_MODES, listed="choices")
    total_steps: int = o.option(150_000, "Environment steps, summed over the environments.", listed=True,
                                bounds=o.Bounds(high=MAX_ENV_STEPS))  # at least --envs: __post_init__
    envs: int = o.option(16, "CartPole environments stepped in lockstep.", listed=True,  # one update per lockstep
                         bounds=o.between(1, 1024))
    gamma: float = o.gamma()
    optimizer: str = o.option("tf1-rmsprop", "tf1-rmsprop: TF-1's RMSPropOptimizer (decay 0.9, ε 1e-10 inside the "
                                             "root, mean square starting at 1), the tutorial's; torch-rmsprop: "
                                             "torch.optim.RMSprop(alpha=0.99, eps=1e-5), mean square starting at 0.",
                              choices=OPTIMIZERS, listed="choices")  # both networks use it
    critic_lr: float = o.option(2e-3, "RMSProp learning rate, critic.", bounds=o.positive())
    actor_lr: float = o.option(2e-3, "RMSProp learning rate, actor.", bounds=o.positive())
    entropy: float = o.option(0.01, "Entropy bonus weight β.", bounds=o.nonnegative())  # keeps the policy exploring
    anneal_lr: bool = o.anneal_lr("Decay both learning rates linearly to 0 over the run.")
    hidden: int = o.fixed(64, o.between(1, 4096))  # units in each of the two hidden layers of both networks
    eval_every: int = o.eval_every(10_000)  # play greedy episodes and keep the best actor so far ...
    checkpoint_episodes: int = o.checkpoint_episodes()  # ... judged on this many episodes (SB3's EvalCallback)
    eval_episodes: int = o.eval_episodes()  # the chosen checkpoint (and the last actor) reported on fresh episodes
    windows: int = o.windows()  # windows of the training table

    cpu_only: ClassVar[str | None] = "two 64-unit networks fed --envs states per update (16 by default): a GPU " \
                                     "would only add transfer latency"

    def __post_init__(self) -> None:
        check_option(self.grad_mode in GRAD_MODES, "grad_mode",
                     lambda say: f"unknown {say('grad_mode')} {self.grad_mode!r}: use explicit or backward")
        check_option(self.optimizer in OPTIMIZERS, "optimizer",
                     lambda say: f"unknown {say('optimizer')} {self.optimizer!r}: use tf1-rmsprop or torch-rmsprop")
        super().__post_init__()  # the declared bounds
        check_option(self.total_steps >= self.envs, "total_steps",
                     lambda say: f"{say('total_steps')} must be at least {say('envs')} ({self.envs}), "
                                 f"got {self.total_steps}")
