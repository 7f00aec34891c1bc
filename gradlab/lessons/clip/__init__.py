"""`gradlab clip`: compute → process → apply gradients, with clipping by global norm.

This folder is the lesson: settings.py (its options), lesson.py (the math and the run), exercises/ (what students
write). This file is its entry in the registry (gradlab.lessons), read without torch.
"""

from gradlab.lessons.clip.settings import Config
from gradlab.lessons.info import LessonInfo

INFO = LessonInfo(
    name="clip",
    config=Config,
    idea="tf.gradients (or compute_gradients) → clip_by_global_norm → apply_gradients",
    short_help="Compute → process → apply gradients: clipping by global norm tames exploding gradients.",
    help="""Train with compute → clip_by_global_norm → apply_gradients, and without, side by side.

    Shows that the three explicit steps equal backward(); step(), that our global-norm formula equals
    torch.nn.utils.clip_grad_norm_, the longest step each run took (a clipped SGD step is at most lr·clip_norm
    long), and what clipping does to a network whose gradients explode.
    The tutorial's model with clipping: --config configs/clip-tutorial.toml (its lr and clip norm are gradlab's:
    the tutorial gives none for its clipping example).
    """,
    needs_data=True,
    quick={"dataset": "mnist-sample", "offline": True, "epochs": 2},
    step_inputs={"images": 1},
    answered_by={},
    passes_check={
        "global_norm": ("gradlab.kit.training.global_norm",),
        "clip_by_global_norm": ("gradlab.lessons.clip.exercises.checks._clip_formula",
                                "gradlab.lessons.clip.exercises.checks._ranks_local_fn",
                                "gradlab.kit.training.clip_by_global_norm"),
        "clip_across_ranks": ("gradlab.lessons.clip.exercises.checks._ranks_reference",),
    },
    graded_variant="clip_graded.clip_by_norm",
)
