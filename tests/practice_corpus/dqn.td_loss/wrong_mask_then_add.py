# gradlab-exercise: dqn.td_loss
# corpus: wrong
# mistake: computes the target, then masks it: y = y * (1 - done), which zeroes the reward of terminal transitions.
# relation: y = (r + γ max Q(s2)) · (1 − done); the reward must stay, only the bootstrap is masked
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q = online(s)[torch.arange(len(a)), a]
    with torch.no_grad():
        y = r + gamma * target(s2).max(dim=1).values
        y = y * (1 - done)
    return F.smooth_l1_loss(q, y)
