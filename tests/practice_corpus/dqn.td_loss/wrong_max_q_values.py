# gradlab-exercise: dqn.td_loss
# corpus: wrong
# mistake: forgets to use the actions a at all: predicted = online(s).max(dim=1).values, like the target's max.
# relation: Q(s) maxed over the actions where Q(s, a) of the action taken belongs
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q_values = online(s)
    predicted = q_values.max(dim=1).values
    next_q = target(s2).max(dim=1).values.detach()
    y = r + gamma * next_q * (1 - done)
    return F.smooth_l1_loss(predicted, y)
