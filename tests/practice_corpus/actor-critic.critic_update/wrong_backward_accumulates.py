# gradlab-exercise: actor-critic.critic_update
# corpus: wrong
# mistake: uses loss.backward() without clearing .grad first, so the new gradient is added to whatever .grad already held.
# relation: right when .grad is None/zero on entry; update computed from (stale .grad + expected gradient) otherwise
import torch
import torch.nn.functional as F


def critic_update(critic, optimizer, s, r, s2, done, gamma):
    with torch.no_grad():
        target = r + gamma * (1 - done) * critic(s2).view(-1)
    v = critic(s).view(-1)
    loss = F.mse_loss(v, target)
    loss.backward()
    optimizer.step()
