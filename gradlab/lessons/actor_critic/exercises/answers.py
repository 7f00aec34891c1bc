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


def actor_loss(actor, critic, s, a, r, s2, done, gamma):
    with torch.no_grad():  # δ is a number to the actor: no gradient reaches the critic
        delta = r + gamma * (1 - done) * critic(s2).squeeze(1) - critic(s).squeeze(1)
    log_pi = torch.log_softmax(actor(s), dim=1).gather(1, a.unsqueeze(1)).squeeze(1)
    return -(log_pi * delta).mean()
