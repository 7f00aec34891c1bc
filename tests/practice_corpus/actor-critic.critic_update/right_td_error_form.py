# gradlab-exercise: actor-critic.critic_update
# corpus: right
# mistake: none: writes the gradient of the mean squared TD error as the gradient of −2·mean(td.detach()·V(s)) — the semi-gradient form used in actor-critic code.
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def critic_update(critic, optimizer, s, r, s2, done, gamma):
    v = critic(s).squeeze(1)
    with torch.no_grad():
        td = r + gamma * (1 - done) * critic(s2).squeeze(1) - v
    surrogate = -2.0 * (td * v).mean()
    grads = torch.autograd.grad(surrogate, tuple(critic.parameters()))
    for p, g in zip(critic.parameters(), grads):
        p.grad = g
    optimizer.step()
