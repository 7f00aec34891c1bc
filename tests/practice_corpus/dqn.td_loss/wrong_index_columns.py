# gradlab-exercise: dqn.td_loss
# corpus: wrong
# mistake: selects Q(s, a) with q[:, a], which takes whole columns (an (N, N) matrix), not one entry per row; the loss then broadcasts against y.
# relation: loss over all N×N pairs (q[i, a_j] vs y_j) instead of the N diagonal ones; right only for N = 1
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q = online(s)[:, a]
    with torch.no_grad():
        y = r + gamma * (1 - done) * target(s2).max(dim=1).values
    return F.smooth_l1_loss(q, y)
