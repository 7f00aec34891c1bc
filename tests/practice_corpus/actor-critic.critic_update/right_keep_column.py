# gradlab-exercise: actor-critic.critic_update
# corpus: right
# mistake: none: keeps V(s) as an (N, 1) column and makes the target a column too (unsqueeze), F.mse_loss; grads copied into .grad with copy_ when it exists.
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def critic_update(critic, optimizer, s, r, s2, done, gamma):
    params = [p for p in critic.parameters() if p.requires_grad]
    v = critic(s)
    target = (r + gamma * (1 - done) * critic(s2).squeeze(1)).unsqueeze(1).detach()
    loss = F.mse_loss(v, target)
    grads = torch.autograd.grad(loss, params)
    for p, g in zip(params, grads):
        if p.grad is None:
            p.grad = g.clone()
        else:
            p.grad.copy_(g)
    optimizer.step()
