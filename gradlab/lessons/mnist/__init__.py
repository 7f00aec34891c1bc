"""`gradlab mnist`: softmax regression on MNIST three ways (optimizer, manual gradient, analytic gradient).

This folder is the lesson: settings.py (its options), lesson.py (the math and the run), exercises/ (what students
write). This file is its entry in the registry (gradlab.lessons), read without torch.
"""

from gradlab.lessons.info import LessonInfo
from gradlab.lessons.mnist.settings import Config

INFO = LessonInfo(
    name="mnist",
    config=Config,
    idea="optimizer.minimize(cost) ≡ tf.gradients + W.assign(W − lr·grad) ≡ the gradient derived by hand",
    short_help="Softmax regression on MNIST: optimizer step vs manual gradient step vs analytic gradient.",
    help="""Train softmax regression on MNIST three ways and prove they are the same gradient descent.

    The TF-1 tutorial: `GradientDescentOptimizer(lr).minimize(cost)` equals `tf.gradients` then
    `W.assign(W - lr * grad)`. Defaults are the tutorial's (configs/mnist-tutorial.toml).
    """,
    needs_data=True,
    quick={"dataset": "mnist-sample", "offline": True, "epochs": 3},
    step_inputs={},
    answered_by={
        "softmax_grad": "analytic_gradients",
    },
    passes_check={
        "sgd_step": ("gradlab.lessons.mnist.exercises.checks._sgd_reference",),
        "softmax_grad": ("gradlab.lessons.mnist.exercises.checks._grad_reference",),
        "LogSoftmax": ("gradlab.lessons.mnist.exercises.checks._StableLogSoftmax",),
    },
    graded_variant="mnist_graded.weighted_softmax_grad",
)
