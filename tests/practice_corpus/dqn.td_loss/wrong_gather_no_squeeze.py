# gradlab-exercise: dqn.td_loss
# corpus: wrong
# mistake: gather returns shape (N, 1), which is compared with y of shape (N,): broadcasting makes an (N, N) loss.
# relation: loss over all N×N pairs (q_i vs y_j); right only for N = 1 (PyTorch warns about the size mismatch)
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q = online(s).gather(1, a.unsqueeze(1))
    y = (r + gamma * (1 - done) * target(s2).max(1).values).detach()
    return F.smooth_l1_loss(q, y)
