"""Model answers to the exercises of `gradlab actor-critic`, as a student would write them: what the notebooks' "Your
turn" cells become when the suite runs them (scripts/notebooks.py --answers), what a teacher can hand out afterwards.
The suite checks each one with `gradlab check`, as it checks a student's file; never imported beside a submission."""

import torch


def critic_update(critic, optimizer, s, r, s2, done, gamma):
    with torch.no_grad():
        target = r + gamma * (1 - done) * critic(s2).squeeze(1)
    loss = ((target - critic(s).squeeze(1)) ** 2).mean()
    grads = torch.autograd.grad(loss, list(critic.parameters()))
    for p, g in zip(critic.parameters(), grads, strict=True):
        p.grad = g
    optimizer.step()
