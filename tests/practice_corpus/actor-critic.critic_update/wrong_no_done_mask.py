# gradlab-exercise: actor-critic.critic_update
# corpus: wrong
# mistake: forgets (1 − done): the value of the state after a terminal transition is still bootstrapped.
# relation: right for non-terminal transitions only
import torch
import torch.nn.functional as F


def critic_update(critic, optimizer, s, r, s2, done, gamma):
    with torch.no_grad():
        target = r + gamma * critic(s2).squeeze(-1)
    v = critic(s).squeeze(-1)
    loss = (target - v).pow(2).mean()
    grads = torch.autograd.grad(loss, critic.parameters())
    for p, g in zip(critic.parameters(), grads):
        p.grad = g
    optimizer.step()
