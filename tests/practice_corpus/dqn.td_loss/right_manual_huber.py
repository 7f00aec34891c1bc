# gradlab-exercise: dqn.td_loss
# corpus: right
# mistake: none: the Huber loss written by hand with torch.where; the target under torch.no_grad and the terminal mask by torch.where(done > 0, ...).
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    q = online(s).gather(1, a.unsqueeze(-1)).squeeze(-1)
    with torch.no_grad():
        best = target(s2).max(dim=1).values
        y = torch.where(done > 0, r, r + gamma * best)
    d = q - y
    huber = torch.where(d.abs() < 1, 0.5 * d ** 2, d.abs() - 0.5)
    return huber.mean()
