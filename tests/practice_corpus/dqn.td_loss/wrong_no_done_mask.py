# gradlab-exercise: dqn.td_loss
# corpus: wrong
# mistake: forgets the (1 − done) factor, so terminal transitions still bootstrap from the next state.
# relation: right for non-terminal transitions only; terminal ones get y = r + γ max Q instead of r
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q = online(s).gather(1, a.view(-1, 1)).view(-1)
    with torch.no_grad():
        y = r + gamma * target(s2).max(1)[0]
    return F.smooth_l1_loss(q, y)
