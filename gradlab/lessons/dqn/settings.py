"""The settings of `gradlab dqn`, each declared once (gradlab.kit.options). No torch here: `gradlab dqn --help` reads
this module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from gradlab.errors import check, check_option
from gradlab.kit import options as o
from gradlab.kit.options import MAX_ENV_STEPS

TARGET_MODES = ("stop-grad", "placeholder", "no-stop-grad")


@dataclass
class Config(o.LessonConfig):
    """Settings of `gradlab dqn`; the seed drives the environment, the network, ε-greedy and replay sampling.

    Defaults start from rl-baselines3-zoo's CartPole-v1 DQN (hyperparams/dqn.yml at 22e3ff2, "Almost Tuned": a
    constant lr 2.3e-3, batch 64, net [256, 256], 128 gradient steps every 256 environment steps, ε to 0.04 over the
    first 16%) and differ from it: a 128×128 network, the learning rate annealed to 0, bursts of 64 gradient steps
    every 128 environment steps (chosen by seed sweeps that were not kept: docs/teach/dependable.md), and, as SB3's
    EvalCallback, the best of the checkpoints taken every 1,000 steps reported on fresh episodes. `make bench`
    sweeps 20 seeds. Fields without an option (ε, the network's width, the table's windows) are fixed by the lesson;
    gradlab.lessons.dqn.settings.Config(...) still takes them.
    """

    target: str = o.flag_group(  # how the target y is kept out of the graph
        "stop-grad",
        ("--stop-grad", "stop-grad", "Cut the target with .detach() (TF: tf.stop_gradient). The default."),
        ("--placeholder", "placeholder",
         "Compute the target in a torch.no_grad() pass and use it as a constant (TF: feed_dict)."),
        ("--no-stop-grad", "no-stop-grad", "Leave the target in the graph: gradients flow into whatever computed it."),
        listed=True)
    target_net: bool = o.option(True, "Compute the target with the online network itself (combines with the flags "
                                      "above).", flag="--no-target-net", value=False, listed=True)
    compare: bool = o.option(False, "Train the main variants with the same seed, side by side.", listed=True)
    total_steps: int = o.option(30_000, "Environment steps per variant.", listed=True,
                                bounds=o.between(1, MAX_ENV_STEPS))
    gamma: float = o.gamma()  # y = r + γ max q(s', ·)
    lr: float = o.adam_lr(2.3e-3)  # annealed linearly to 0 over the run, with anneal_lr
    anneal_lr: bool = o.anneal_lr("Decay the learning rate linearly to 0 over the run.")  # steadies the final policy
    target_update: int = o.option(10, "Sync the target network every N environment steps.", bounds=o.at_least(1))
    buffer_size: int = o.option(100_000, "Replay buffer capacity.",  # transitions
                                bounds=o.between(1, MAX_ENV_STEPS))
    batch_size: int = o.batch_size(64, "Transitions per gradient step.", bounds=o.between(1, 65_536))
    learning_starts: int = o.option(1000, "Environment steps before the first gradient step (ε-greedy from the "
                                          "start of the ε schedule).")
    train_every: int = o.option(128, "Environment steps between training rounds.", bounds=o.at_least(1))
    gradient_steps: int = o.option(64, "Gradient steps per round.",  # the target net is fixed within a round
                                   bounds=o.between(1, 10_000))
    eps_start: float = 1.0  # ε-greedy: start fully random ...
    eps_end: float = 0.04  # ... end at this ε ...
    eps_fraction: float = 0.16  # ... after this fraction of total_steps (linear schedule)
    hidden: int = o.fixed(128, o.between(1, 4096))  # units in each of the two hidden layers
    eval_every: int = o.eval_every(1_000)  # play greedy episodes and keep the best policy so far ...
    checkpoint_episodes: int = o.checkpoint_episodes()  # ... judged on this many episodes (SB3's EvalCallback)
    eval_episodes: int = o.eval_episodes()  # the chosen checkpoint (and the last policy) reported on fresh episodes
    windows: int = o.windows()  # evaluation windows in the training table

    cpu_only: ClassVar[str | None] = "a 4→128→128→2 network fed one transition per step: a GPU would only add " \
                                     "transfer latency"

    def __post_init__(self) -> None:
        check_option(self.target in TARGET_MODES, "target",  # set by a flag group: no --target to name
                     lambda _: f"unknown target mode {self.target!r}: use {', '.join(TARGET_MODES)}")
        super().__post_init__()  # the declared bounds
        check_option(self.batch_size <= self.buffer_size, "batch_size",
                     lambda say: f"{say('batch_size', self.batch_size)} is larger than "
                                 f"{say('buffer_size', self.buffer_size)}")
        check(0 <= self.eps_end <= self.eps_start <= 1, "ε must satisfy 0 ≤ eps_end ≤ eps_start ≤ 1")
