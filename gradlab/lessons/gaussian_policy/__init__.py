"""`gradlab gaussian-policy`: a custom-gradient layer for a Gaussian policy's score function, with REINFORCE.

This folder is the lesson: settings.py (its options), lesson.py (the math and the run), exercises/ (what students
write). This file is its entry in the registry (gradlab.lessons), read without torch.
"""

from gradlab.lessons.gaussian_policy.settings import Config
from gradlab.lessons.info import LessonInfo

INFO = LessonInfo(
    name="gaussian-policy",
    config=Config,
    idea="a custom-gradient layer for a Gaussian policy's score function, trained with REINFORCE",
    short_help="A custom-gradient layer for a Gaussian policy's score, trained with REINFORCE.",
    help="""∂ln π/∂μ = (a−μ)/σ², ∂ln π/∂σ = ((a−μ)²−σ²)/σ³ as a custom backward, checked against
    torch.distributions.Normal and gradcheck, beside the tutorial's layer run as written and autograd through an
    undetached sample; then REINFORCE (leave-one-out baseline) on a one-step bandit with a known optimum, beside
    Adam on the exact gradient.
    """,
    step_inputs={},
    answered_by={},
    passes_check={
        "GaussianLogProb": ("gradlab.lessons.gaussian_policy.exercises.checks._Layer",),
    },
    graded_variant="gaussian_policy_graded.score",
)
