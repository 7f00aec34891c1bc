# gradlab-exercise: actor-critic.critic_update
# corpus: wrong
# mistake: V(s) has shape (N, 1) and target (N,): target − V(s) broadcasts to an (N, N) matrix, and the mean is over all N² pairs.
# relation: loss = mean over all pairs (target_j − V(s)_i)² instead of matching i = j; right only for N = 1
import torch
import torch.nn.functional as F


def critic_update(critic, optimizer, s, r, s2, done, gamma):
    with torch.no_grad():
        target = r + gamma * (1 - done) * critic(s2).squeeze(1)
    loss = torch.mean((target - critic(s)) ** 2)
    grads = torch.autograd.grad(loss, critic.parameters())
    for p, g in zip(critic.parameters(), grads):
        p.grad = g
    optimizer.step()
