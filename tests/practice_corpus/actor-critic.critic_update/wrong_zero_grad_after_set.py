# gradlab-exercise: actor-critic.critic_update
# corpus: wrong
# mistake: calls optimizer.zero_grad() after writing the gradients into .grad and before optimizer.step(), which wipes them: RMSprop steps with no gradient.
# relation: parameters unchanged (update = 0 instead of expected); optimizer state decays
import torch
import torch.nn.functional as F


def critic_update(critic, optimizer, s, r, s2, done, gamma):
    with torch.no_grad():
        target = r + gamma * (1 - done) * critic(s2).squeeze(1)
    loss = ((target - critic(s).squeeze(1)) ** 2).mean()
    grads = torch.autograd.grad(loss, critic.parameters())
    for p, g in zip(critic.parameters(), grads):
        p.grad = g
    optimizer.zero_grad()
    optimizer.step()
