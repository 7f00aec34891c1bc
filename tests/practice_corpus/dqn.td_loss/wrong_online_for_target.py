# gradlab-exercise: dqn.td_loss
# corpus: wrong
# mistake: bootstraps from the online network instead of the target network (detached, so no leak, but the wrong network).
# relation: right only when target and online hold the same weights; otherwise y uses online's max Q
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q = online(s).gather(1, a[:, None]).squeeze(1)
    with torch.no_grad():
        y = r + gamma * (1 - done) * online(s2).max(dim=1).values
    return F.smooth_l1_loss(q, y)
