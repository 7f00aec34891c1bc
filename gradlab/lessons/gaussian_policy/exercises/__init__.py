"""What students write in `gradlab gaussian-policy`: each exercise's text (torch-free: `gradlab exercises` reads it).
How a submission is called is harness.py; its reference, known mistakes and claims are checks.py; model answers are
answers.py."""

from gradlab.practice.exercise import Exercise

EXERCISES = [
    Exercise(
        "score", 1,
        "the score of a Gaussian policy, ∂ln π/∂μ and ∂ln π/∂σ, in closed form",
        "def score(a, mu, sigma):",
        """The gradient of ln N(a; μ, σ²) with respect to μ and σ, from the formulas:

        ∂ln π/∂μ = (a − μ)/σ²,   ∂ln π/∂σ = ((a − μ)² − σ²)/σ³

        Shapes: a, mu, sigma of the same shape (one number per action dimension, or a batch); sigma > 0. Return
        (d_mu, d_sigma). TF-1: the tutorial's @tf.custom_gradient layer computed these in its forward and sent
        `_y * dy` (its input) back as the gradient; here they are the backward of ln π.""",
        forbidden=("torch.distributions.Normal.log_prob",)),
]
