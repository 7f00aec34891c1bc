"""The model answer of gaussian_policy_graded.score, as a student would write it (the teacher's, never given to
students)."""

import math

import torch


def score(a, mu, log_std):
    sigma = torch.exp(log_std)
    u = torch.atanh(a)  # a = tanh(u)
    z = (u - mu) / sigma
    log_pi = -0.5 * z**2 - log_std - 0.5 * math.log(2 * math.pi) - torch.log(1 - a**2)  # minus ln |da/du|
    return log_pi, z / sigma, z**2 - 1  # ∂/∂μ = (u − μ)/σ²; ∂/∂log σ = σ · ∂/∂σ = (u − μ)²/σ² − 1
