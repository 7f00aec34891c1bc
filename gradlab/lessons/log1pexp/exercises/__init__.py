"""What students write in `gradlab log1pexp`: each exercise's text (torch-free: `gradlab exercises` reads it). How a
submission is called is harness.py; its reference, known mistakes and claims are checks.py; model answers are
answers.py."""

from gradlab.practice.exercise import Exercise

EXERCISES = [
    Exercise(
        "Log1pExp", 3,
        "log(1 + eˣ) as a torch.autograd.Function: no overflow at x = 100 in float32, a right second derivative",
        "class Log1pExp(torch.autograd.Function):",
        """forward(ctx, x) = log(1 + eˣ), computed so that it never overflows: max(x, 0) + log1p(exp(−|x|))
        backward(ctx, dy) = dy · sigmoid(x), written with differentiable torch ops on the saved x, so that the
        second derivative (sigmoid'(x)) is right too.

        Shapes: x any shape, float32 or float64. TF-1: @tf.custom_gradient, whose backward dy · (1 − 1/(1 + e))
        was built from the graph tensor e = tf.exp(x), so a second tf.gradients differentiated it. Keeping e from
        forward on ctx instead makes it a constant to autograd: the second derivative comes out 0."""),
]
