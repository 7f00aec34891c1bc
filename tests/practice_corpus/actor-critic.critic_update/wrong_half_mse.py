# gradlab-exercise: actor-critic.critic_update
# corpus: wrong
# mistake: uses the ½·mean(td²) convention, so the gradient written into .grad is half the one asked for. NB RMSprop's first step is almost scale-invariant (g/√((1−α)g²+ε)), so the parameter update alone barely shows it; .grad and the optimizer's square_avg do.
# relation: gradient = ½ × expected; parameter update ≈ expected on the first step (RMSprop normalises), square_avg = ¼ × expected
import torch
import torch.nn.functional as F


def critic_update(critic, optimizer, s, r, s2, done, gamma):
    with torch.no_grad():
        target = r + gamma * (1 - done) * critic(s2).squeeze(1)
    td = target - critic(s).squeeze(1)
    loss = 0.5 * (td ** 2).mean()
    grads = torch.autograd.grad(loss, critic.parameters())
    for p, g in zip(critic.parameters(), grads):
        p.grad = g
    optimizer.step()
