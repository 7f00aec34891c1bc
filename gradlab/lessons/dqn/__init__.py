"""`gradlab dqn`: stop_gradient on the DQN target, on CartPole.

This folder is the lesson: settings.py (its options), lesson.py (the math and the agent), exercises/ (what students
write). This file is its entry in the registry (gradlab.lessons), read without torch.
"""

from gradlab.lessons.dqn.settings import Config
from gradlab.lessons.info import LessonInfo

INFO = LessonInfo(
    name="dqn",
    config=Config,
    idea="stop_gradient on the DQN target ≡ feeding it as a constant; what leaks without it",
    short_help="stop_gradient on the DQN target (CartPole): detach ≡ placeholder; without it, gradients leak.",
    help="""A small DQN on CartPole-v1: gradient anatomy of the target on one fixed batch, then training.

    Claims: placeholder ≡ stop-grad (bitwise, in the anatomy and over a whole training run); without
    stop-grad the gradient that reaches the target network, and with no target network the naive residual
    gradient, match the chain rule written out by hand; the stop-grad agent learns (≥ 195).
    """,
    full={"compare": True},
    step_inputs={"transitions": 1},
    answered_by={},
    passes_check={
        "td_target": ("gradlab.lessons.dqn.exercises.checks._target_reference",),
        "td_loss": ("gradlab.lessons.dqn.exercises.checks._td_reference",),
    },
    graded_variant="dqn_graded.td_loss",
)
