# gradlab-exercise: actor-critic.critic_update
# corpus: wrong
# mistake: sums the squared TD errors instead of averaging them: the gradient is N times too big (RMSprop hides most of it on a first step).
# relation: gradient = N × expected; parameter update ≈ expected on a fresh RMSprop's first step, wrong after that (square_avg N² × expected)
import torch
import torch.nn.functional as F


def critic_update(critic, optimizer, s, r, s2, done, gamma):
    with torch.no_grad():
        target = r + gamma * (1 - done) * critic(s2).squeeze(1)
    loss = ((target - critic(s).squeeze(1)) ** 2).sum()
    grads = torch.autograd.grad(loss, critic.parameters())
    for p, g in zip(critic.parameters(), grads):
        p.grad = g
    optimizer.step()
