"""`gradlab log1pexp`: custom gradients, and the NaN gradient of log(1 + exp(x)) at x = 100 in float32.

This folder is the lesson: settings.py (its options), lesson.py (the math and the run), exercises/ (what students
write). This file is its entry in the registry (gradlab.lessons), read without torch.
"""

from gradlab.lessons.info import LessonInfo
from gradlab.lessons.log1pexp.settings import Config

INFO = LessonInfo(
    name="log1pexp",
    config=Config,
    idea="@tf.custom_gradient: log(1 + exp(x)) has a NaN gradient at x = 100 in float32",
    short_help="Custom gradients: log(1+exp(x)) has a NaN gradient at x=100 in float32; fix it right.",
    help="""log(1 + eˣ) six ways: naive, a torch.where guard, a double where, the tutorial's custom gradient
    (ported), a stable torch.autograd.Function and F.softplus, beside the exact answer; the NaN's backward pass
    link by link; second derivatives of the ports (e kept on ctx, e rebuilt from x, @once_differentiable).
    """,
    step_inputs={},
    answered_by={
        "softplus": "double_where",
        "Log1pExp": "StableLog1pExp",
    },
    passes_check={
        "softplus": ("gradlab.lessons.log1pexp.exercises.checks._softplus_reference",
                     "gradlab.lessons.log1pexp.lesson.double_where"),
        "Log1pExp": ("gradlab.lessons.log1pexp.exercises.checks._StableLog1pExp",
                     "gradlab.lessons.log1pexp.exercises.checks._SoftplusForward",
                     "gradlab.lessons.log1pexp.lesson.StableLog1pExp"),
    },
    graded_variant="log1pexp_graded.Log1mExp",
)
