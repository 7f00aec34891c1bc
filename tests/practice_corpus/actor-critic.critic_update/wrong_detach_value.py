# gradlab-exercise: actor-critic.critic_update
# corpus: wrong
# mistake: detaches V(s) instead of the target: the gradient flows only through V(s2) (the wrong side).
# relation: gradient = only the bootstrap term through V(s2) (zero for terminal transitions), not the expected semi-gradient
import torch
import torch.nn.functional as F


def critic_update(critic, optimizer, s, r, s2, done, gamma):
    v = critic(s).squeeze(1).detach()
    target = r + gamma * (1 - done) * critic(s2).squeeze(1)
    loss = ((target - v) ** 2).mean()
    grads = torch.autograd.grad(loss, list(critic.parameters()))
    for p, g in zip(critic.parameters(), grads):
        p.grad = g
    optimizer.step()
