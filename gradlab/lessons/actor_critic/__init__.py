"""`gradlab actor-critic`: a critic trained from explicit gradients with TF-1's RMSProp.

This folder is the lesson: settings.py (its options), lesson.py (the math and the agent), exercises/ (what students
write). This file is its entry in the registry (gradlab.lessons), read without torch.
"""

from gradlab.lessons.actor_critic.settings import Config
from gradlab.lessons.info import LessonInfo

INFO = LessonInfo(
    name="actor-critic",
    config=Config,
    idea="a critic trained from tf.gradients + RMSProp.apply_gradients (TF-1's RMSProp); get/set all parameters",
    short_help="A critic trained from explicit gradients with TF-1's RMSProp; get/set parameters.",
    help="""One-step actor-critic on CartPole-v1; the critic's gradients are computed with autograd.grad, written
    into .grad and applied by TF-1's RMSProp (gradlab.kit.optim.TFRMSprop; --optimizer torch-rmsprop for torch's,
    another algorithm), as the tutorial's tf.gradients + RMSPropOptimizer.apply_gradients. Claims: explicit ≡
    backward (bitwise), TFRMSprop ≡ TF-1's formula by hand, torch's RMSprop steps further on the same gradients,
    a critic copied through a flat parameter vector or a state_dict gives identical outputs, and the actor learns.
    """,
    # 60,000 steps at twice the default learning rates, chosen by a seed sweep that was not kept
    # (bench/bench_seeds.py --lessons actor-critic --extra=--quick re-runs it)
    quick={"total_steps": 60_000, "critic_lr": 4e-3, "actor_lr": 4e-3},
    step_inputs={"states": 1},
    answered_by={},
    passes_check={
        "actor_loss": ("gradlab.lessons.actor_critic.exercises.checks._actor_reference",),
        "critic_update": ("gradlab.lessons.actor_critic.exercises.checks._critic_reference",),
    },
    graded_variant="actor_critic_graded.critic_update",
)
