# gradlab-exercise: dqn.td_loss
# corpus: wrong
# mistake: detaches the prediction Q(s, a) as well as the target, so the loss has no graph to online's parameters.
# relation: loss value = expected; gradient to online = none (loss does not require grad)
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q = online(s).gather(1, a.unsqueeze(1)).squeeze(1).detach()
    y = (r + gamma * (1 - done) * target(s2).max(dim=1).values).detach()
    return F.smooth_l1_loss(q, y)
