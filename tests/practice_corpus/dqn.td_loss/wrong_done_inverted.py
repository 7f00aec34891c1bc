# gradlab-exercise: dqn.td_loss
# corpus: wrong
# mistake: multiplies by done instead of (1 − done): only terminal transitions bootstrap.
# relation: mask inverted: non-terminal transitions get y = r (no bootstrap), terminal ones y = r + γ max Q; right only for a batch where γ·max Q = 0
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        y = r + gamma * done * target(s2).max(dim=1).values
    return F.smooth_l1_loss(q, y)
