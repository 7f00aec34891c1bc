# gradlab-exercise: actor-critic.critic_update
# corpus: wrong
# mistake: applies a plain SGD step by hand (p -= lr·g) instead of handing the gradients to the RMSprop optimizer.
# relation: update = −lr·g (SGD) instead of RMSprop's −lr·g/√(v + ε); optimizer state untouched
import torch
import torch.nn.functional as F


def critic_update(critic, optimizer, s, r, s2, done, gamma):
    lr = optimizer.param_groups[0]["lr"]
    with torch.no_grad():
        target = r + gamma * (1 - done) * critic(s2).squeeze(1)
    loss = ((target - critic(s).squeeze(1)) ** 2).mean()
    grads = torch.autograd.grad(loss, critic.parameters())
    with torch.no_grad():
        for p, g in zip(critic.parameters(), grads):
            p -= lr * g
