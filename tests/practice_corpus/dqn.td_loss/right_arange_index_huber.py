# gradlab-exercise: dqn.td_loss
# corpus: right
# mistake: none: picks Q(s, a) with q[arange(N), a], takes amax, detaches y, and uses F.huber_loss (δ = 1 ≡ smooth_l1 with β = 1).
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    n = s.shape[0]
    q = online(s)[torch.arange(n), a]
    y = r + gamma * (1.0 - done) * target(s2).amax(dim=1)
    return F.huber_loss(q, y.detach())
