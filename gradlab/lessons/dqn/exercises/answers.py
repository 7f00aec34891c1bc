"""Model answers to the exercises of `gradlab dqn`, as a student would write them: what the notebooks' "Your turn" cells
become when the suite runs them (scripts/notebooks.py --answers), what a teacher can hand out afterwards. The suite
checks each one with `gradlab check`, as it checks a student's file; never imported beside a submission."""

import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = r + gamma * (1 - done) * target(s2).max(dim=1).values
    q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
    return F.smooth_l1_loss(q, y)


def td_target(target, r, s2, done, gamma):
    with torch.no_grad():  # a number to move towards: no graph
        return r + gamma * (1 - done) * target(s2).max(dim=1).values
