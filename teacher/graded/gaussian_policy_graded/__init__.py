"""gaussian_policy_graded: the log-density and the score of a tanh-squashed Gaussian policy, SAC's, a graded variant
of gaussian-policy.score (the same skill: ∂ln π/∂θ in closed form at a fixed action) whose answer is in no student's
gradlab: the lesson's layer and score, and the base exercise's answer, are the plain Gaussian's in σ, at a itself.
Torch-free.

Sources: Haarnoja, Zhou, Abbeel & Levine (2018), "Soft Actor-Critic: Off-Policy Maximum Entropy Deep Reinforcement
Learning with a Stochastic Actor", ICML, appendix C ("Enforcing Action Bounds"): a = tanh(u), u ~ N(μ, σ²), and
log π(a|s) = log μ(u|s) − Σ_i log(1 − tanh²(u_i)). torch.distributions.transforms.TanhTransform computes the same
log-Jacobian as 2(log 2 − u − softplus(−2u)) (torch/distributions/transforms.py, torch 2.14), which the reference
uses.
"""

from gradlab.kit.exercise import Exercise

EXERCISES = [
    Exercise(
        function="score", level=3,
        what="the log-density of a tanh-squashed Gaussian policy (SAC's) and its score ∂ln π/∂μ, ∂ln π/∂log σ, in "
             "closed form",
        signature="def score(a, mu, log_std):",
        doc="""The action is squashed into (−1, 1): a = tanh(u) with u ~ N(μ, σ²), σ = exp(log_std) (SAC's policy,
        Haarnoja et al. 2018, appendix C). At a given action a, per element:

        ln π(a) = ln N(u; μ, σ²) − ln(1 − a²)         u = atanh(a): the change of variables a = tanh(u)
        return (ln π(a), ∂ln π/∂μ, ∂ln π/∂log σ)      the score with respect to μ and log σ, a held fixed

        Derive both derivatives by hand and write them in closed form; no autograd (no requires_grad_, no
        backward) and no torch.distributions. The inputs are not changed.

        Shapes: a, mu, log_std of the same shape, float64, |a| < 1; return three tensors of that shape, one
        number per element. The check runs it, among others, on actions within 1e-6 of ±1, on a = tanh(μ), on
        σ = 1 and on σ ≠ 1, for small and large σ. TF-1: the tutorial's layer was meant to give the plain
        Gaussian's score; this is the policy that keeps actions in bounds.""",
        claims={"score": ("your ln π and score ≡ autograd through TransformedDistribution(Normal(μ, σ), "
                          "TanhTransform()).log_prob(a), float64 (largest |yours − expected| ÷ max(1, largest "
                          "|expected|), tensor by tensor)", 1e-9)},
        keeps=("a", "mu", "log_std"),
        no_autograd=True,
        forbidden=("torch.distributions.Normal.log_prob", "torch.distributions.TransformedDistribution.log_prob",
                   "torch.distributions.transforms.TanhTransform.log_abs_det_jacobian")),
]
