# gradlab-exercise: dqn.td_loss
# corpus: wrong
# mistake: sums the Huber losses over the batch instead of averaging them.
# relation: loss and gradient = N × expected
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        y = r + gamma * (1 - done) * target(s2).max(dim=1).values
    return F.smooth_l1_loss(q, y, reduction="sum")
