"""What students write in `gradlab gaussian-policy`: each exercise's text and what its checks claim (torch-free:
`gradlab exercises` and the pre-flight of `gradlab check` read it). How a submission is called is harness.py; its
reference, known mistakes and what the diagnosis measures are checks.py; model answers are answers.py.

The tutorial's layer (its text, lines 25-38) returned the scores from its forward (`out =
tf.concat([mu_loss, sigma_loss], axis=-1)`) and `grads = _y * dy` from its gradient function: the exercises below
write the layer as it should be, the log-density forward and the scores in backward."""

from gradlab.kit.exercise import Exercise

EXERCISES = [
    Exercise(
        function="score", level=1,
        what="the score of a Gaussian policy, ∂ln π/∂μ and ∂ln π/∂σ, in closed form",
        signature="def score(a, mu, sigma):",
        doc="""The gradient of ln N(a; μ, σ²) with respect to μ and σ, from the formulas:

        ∂ln π/∂μ = (a − μ)/σ²,   ∂ln π/∂σ = ((a − μ)² − σ²)/σ³

        Shapes: a, mu, sigma of the same shape (one number per action dimension, or a batch); sigma > 0; they are
        not changed. Return (d_mu, d_sigma), one number per element. No autograd (no requires_grad_, no
        backward): the check fails a function that builds a graph. TF-1: the tutorial's layer was meant to give
        these as the gradient of ln π.""",
        claims={"score": ("your closed forms ≡ autograd through Normal(μ, σ).log_prob(a) (largest |yours − expected| ÷ "
                          "max(1, largest |expected|), tensor by tensor)", 1e-9)},
        keeps=("a", "mu", "sigma"), no_autograd=True,
        forbidden=("torch.distributions.Normal.log_prob",)),
    Exercise(
        function="GaussianLogProb", level=3,
        what="the Gaussian policy's layer as a torch.autograd.Function: ln π forward, its three gradients in backward",
        signature="class GaussianLogProb(torch.autograd.Function):",
        doc="""forward(ctx, a, mu, sigma) = ln N(a; μ, σ²) = −(a − μ)²/(2σ²) − ln σ − ½ ln 2π, elementwise
        backward(ctx, dy) = (dy · ∂ln π/∂a, dy · ∂ln π/∂μ, dy · ∂ln π/∂σ), with
                  ∂ln π/∂a = −(a − μ)/σ²,  ∂ln π/∂μ = (a − μ)/σ²,  ∂ln π/∂σ = ((a − μ)² − σ²)/σ³
        written with torch operations on the saved inputs, so that second derivatives are right too. The check
        sends a random upstream gradient dy.

        Shapes: a, mu, sigma of the same shape, float64; sigma > 0. torch.distributions.Normal(mu, sigma).log_prob
        computes this (the check compares yours with autograd through it): write it yourself here. TF-1: the
        tutorial's @tf.custom_gradient layer returned the scores from its forward and `_y * dy` from its
        gradient function; here the forward is ln π and the backward the scores.""",
        claims={"layer": ("your value, three gradients (for a random dy) and second derivatives ≡ autograd through "
                          "Normal(μ, σ).log_prob (largest |yours − expected| ÷ max(1, largest |expected|), tensor by "
                          "tensor)", 1e-9)},
        forward="a, mu, sigma",
        forbidden=("torch.distributions.Normal.log_prob",)),
]
