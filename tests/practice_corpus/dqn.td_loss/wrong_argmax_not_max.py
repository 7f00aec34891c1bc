# gradlab-exercise: dqn.td_loss
# corpus: wrong
# mistake: uses .max(1)[1], the index of the best action (0 or 1), instead of .max(1)[0], its value.
# relation: y = r + γ(1 − done)·argmax_a' Q instead of max_a' Q; right only where max Q happens to equal its index
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
    next_q = target(s2).detach().max(1)[1]
    y = r + gamma * (1 - done) * next_q
    return F.smooth_l1_loss(q, y)
