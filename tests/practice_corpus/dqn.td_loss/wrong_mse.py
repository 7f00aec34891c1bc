# gradlab-exercise: dqn.td_loss
# corpus: wrong
# mistake: uses the squared error (F.mse_loss) instead of the Huber loss.
# relation: equals 2 × expected loss where all |td| < 1 (gradient 2×); differs (quadratic vs linear) where |td| > 1
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        y = r + gamma * (1 - done) * target(s2).max(dim=1).values
    return F.mse_loss(q, y)
