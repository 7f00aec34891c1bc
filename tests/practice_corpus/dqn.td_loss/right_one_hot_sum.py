# gradlab-exercise: dqn.td_loss
# corpus: right
# mistake: none: selects Q(s, a) by multiplying with a one-hot mask and summing over actions (the TF-1 way).
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q_all = online(s)
    q = (q_all * F.one_hot(a, q_all.shape[1]).to(q_all.dtype)).sum(dim=1)
    y = r + gamma * (1 - done) * target(s2).detach().max(dim=1).values
    return F.smooth_l1_loss(q, y)
