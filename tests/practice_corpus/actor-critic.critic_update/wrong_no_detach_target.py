# gradlab-exercise: actor-critic.critic_update
# corpus: wrong
# mistake: the target r + γ(1 − done)V(s2) is left in the graph, so autograd.grad also differentiates through V(s2) (the same network): a full-gradient, not a semi-gradient, TD update.
# relation: gradient = expected − γ(1 − done)-weighted term through V(s2); right only when every transition is terminal or γ = 0
import torch
import torch.nn.functional as F


def critic_update(critic, optimizer, s, r, s2, done, gamma):
    v = critic(s).squeeze(1)
    target = r + gamma * (1 - done) * critic(s2).squeeze(1)
    loss = ((target - v) ** 2).mean()
    grads = torch.autograd.grad(loss, list(critic.parameters()))
    for p, g in zip(critic.parameters(), grads):
        p.grad = g
    optimizer.step()
