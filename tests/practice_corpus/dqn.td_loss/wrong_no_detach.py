# gradlab-exercise: dqn.td_loss
# corpus: wrong
# mistake: the target y is not cut from the graph (no detach / no_grad), so gradients leak into the target network (or into online itself when target is online).
# relation: loss value = expected; ∂/∂online right when target is a separate network, but the graph reaches target's parameters; wrong gradient when target is online
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
    y = r + gamma * (1 - done) * target(s2).max(dim=1).values
    return F.smooth_l1_loss(q, y)
