"""gradlab exercise gaussian_policy_graded.score (level 3): the log-density of a tanh-squashed Gaussian policy
(SAC's) and its score ∂ln π/∂μ, ∂ln π/∂log σ, in closed form.

Write it yourself: this exercise is to write what torch.distributions.Normal.log_prob,
torch.distributions.TransformedDistribution.log_prob,
torch.distributions.transforms.TanhTransform.log_abs_det_jacobian do for you, so calling one of them fails a
check of its own.

Write the body of score below, then hand it in as gaussian_score.py: your teacher checks it with the course's own checks,

    gradlab check gaussian_score.py --course course.toml
"""

# gradlab-exercise: gaussian_policy_graded.score
import torch
import torch.nn.functional as F


def score(a, mu, log_std):
    """The action is squashed into (−1, 1): a = tanh(u) with u ~ N(μ, σ²), σ = exp(log_std) (SAC's policy,
    Haarnoja et al. 2018, appendix C). At a given action a, per element:

    ln π(a) = ln N(u; μ, σ²) − ln(1 − a²)         u = atanh(a): the change of variables a = tanh(u)
    return (ln π(a), ∂ln π/∂μ, ∂ln π/∂log σ)      the score with respect to μ and log σ, a held fixed

    Derive both derivatives by hand and write them in closed form; no autograd (no requires_grad_, no
    backward) and no torch.distributions. The inputs are not changed.

    Shapes: a, mu, log_std of the same shape, float64, |a| < 1; return three tensors of that shape, one
    number per element. The check runs it, among others, on actions within 1e-6 of ±1, on a = tanh(μ), on
    σ = 1 and on σ ≠ 1, for small and large σ. TF-1: the tutorial's layer was meant to give the plain
    Gaussian's score; this is the policy that keeps actions in bounds.
    """
    import math
    u = torch.atanh(a)
    sigma = torch.exp(log_std)
    z = (u - mu) / sigma
    logp = -0.5 * z ** 2 - log_std - 0.5 * math.log(2 * math.pi) - torch.log1p(-a) - torch.log1p(a)
    d_mu = z / sigma
    d_log_std = z ** 2
    return logp, d_mu, d_log_std
