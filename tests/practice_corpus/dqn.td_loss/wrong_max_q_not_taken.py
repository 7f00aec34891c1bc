# gradlab-exercise: dqn.td_loss
# corpus: wrong
# mistake: takes the best action's value, online(s).max(1)[0], as the prediction instead of the taken action's Q(s, a).
# relation: Q(s) maxed over the actions where Q(s, a) of the action taken belongs; right only where a is greedy
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q = online(s).max(1)[0]
    with torch.no_grad():
        y = r + gamma * (1 - done) * target(s2).max(1)[0]
    return F.smooth_l1_loss(q, y)
