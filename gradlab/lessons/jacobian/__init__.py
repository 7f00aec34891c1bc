"""`gradlab jacobian`: why gradients of non-scalar outputs sum, full Jacobians, Hessians by nesting.

This folder is the lesson: settings.py (its options), lesson.py (the math and the run), exercises/ (what students
write). This file is its entry in the registry (gradlab.lessons), read without torch.
"""

from gradlab.lessons.info import LessonInfo
from gradlab.lessons.jacobian.settings import Config

INFO = LessonInfo(
    name="jacobian",
    config=Config,
    idea="tf.gradients of a non-scalar sums over outputs; full Jacobians; Hessians by nesting",
    short_help="Jacobians and Hessians: why grad of a non-scalar sums, full Jacobians five ways, nesting.",
    help="""W = log softmax(X y): the summed gradient TF returned, the full Jacobian, and the Hessian.

    Compares a Python loop over outputs, torch.autograd.functional.jacobian, torch.func.jacrev/jacfwd and
    vmap of a vector-Jacobian product against the closed form (e_i − p) yᵀ; the Hessian by jacfwd(jacrev),
    torch.func.hessian, autograd.functional.hessian and tf.hessians' loop over the gradient, against finite
    differences.
    """,
    full={"scaling": True},
    step_inputs={},
    answered_by={
        "hvp": "hessian_loop",  # hessian_loop(f, x) @ v
    },
    passes_check={
        "jacobian_loop": ("gradlab.lessons.jacobian.lesson.jacobian_loop",
                          "gradlab.lessons.jacobian.lesson.jacobian_vmap_vjp"),
    },
    graded_variant="jacobian_graded.batch_jacobian",
)
