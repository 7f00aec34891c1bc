"""What students write in `gradlab jacobian`: each exercise's text (torch-free: `gradlab exercises` reads it). How a
submission is called is harness.py; its reference, known mistakes and claims are checks.py; model answers are
answers.py."""

from gradlab.practice.exercise import Exercise

EXERCISES = [
    Exercise(
        "jacobian_loop", 2,
        "the full Jacobian of f at x by a loop of vector-Jacobian products, one row per output",
        "def jacobian_loop(f, x):",
        """J[i, j] = ∂f_i/∂x_j, one row per output: row i = autograd.grad(f(x)[i], x) (a vector-Jacobian product
        with the unit vector e_i). tf.gradients(f(x), x) returned Σ_i ∂f_i/∂x: the rows summed.

        Shapes: f maps a tensor of shape (n,) to one of shape (m,); x (n,). Return J of shape (m, n).""",
        forbidden=("torch.autograd.functional.jacobian",)),
]
