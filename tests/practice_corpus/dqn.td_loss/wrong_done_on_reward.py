# gradlab-exercise: dqn.td_loss
# corpus: wrong
# mistake: multiplies the whole target, reward included, by (1 − done): a terminal transition's target is 0, not r.
# relation: y = (r + γ max Q(s2)) · (1 − done) instead of r + γ (1 − done) max Q(s2); right for non-terminal ones
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        y = (r + gamma * target(s2).max(1)[0]) * (1 - done)
    return F.smooth_l1_loss(q, y)
