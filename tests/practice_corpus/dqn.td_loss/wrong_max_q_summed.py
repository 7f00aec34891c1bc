# gradlab-exercise: dqn.td_loss
# corpus: wrong
# mistake: the greedy action's Q instead of the taken one's, and the loss summed instead of averaged.
# relation: Q(s) maxed over the actions where Q(s, a) of the action taken belongs (and N × a mean)
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q = online(s).max(1).values
    with torch.no_grad():
        y = r + gamma * (1 - done) * target(s2).max(1).values
    return F.smooth_l1_loss(q, y, reduction="sum")
