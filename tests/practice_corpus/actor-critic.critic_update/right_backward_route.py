# gradlab-exercise: actor-critic.critic_update
# corpus: right
# mistake: none: the usual zero_grad / backward / step route instead of autograd.grad + assigning .grad (same numbers).
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def critic_update(critic, optimizer, s, r, s2, done, gamma):
    with torch.no_grad():
        target = r + gamma * (1 - done) * critic(s2).view(-1)
    loss = F.mse_loss(critic(s).view(-1), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
