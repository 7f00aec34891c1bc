# gradlab-exercise: dqn.td_loss
# corpus: wrong
# mistake: max over actions with keepdim=True, then squeezed: the greedy action's Q, not the taken one's.
# relation: Q(s) maxed over the actions where Q(s, a) of the action taken belongs
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q, _ = online(s).max(dim=1, keepdim=True)
    q = q.squeeze(1)
    with torch.no_grad():
        best_next = target(s2).max(dim=1)[0]
        y = r + gamma * best_next * (1.0 - done)
    return F.smooth_l1_loss(q, y)
