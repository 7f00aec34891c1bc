"""gradlab exercise actor-critic.critic_update (level 2): one critic update from explicitly computed gradients:
autograd.grad, into .grad, then optimizer.step().

Write the body of critic_update below, then check it:

    gradlab check critic_update.py
"""

# gradlab-exercise: actor-critic.critic_update
import torch
import torch.nn.functional as F


def critic_update(critic, optimizer, s, r, s2, done, gamma):
    """One step of the critic V, the tutorial's tf.gradients + RMSProp.apply_gradients:

    target = r + γ · (1 − done) · V(s2)     a number: no gradient through it
    loss   = mean_i (target_i − V(s)_i)²
    grads  = torch.autograd.grad(loss, critic.parameters());  p.grad = g for each;  optimizer.step()

    Shapes: critic maps states (N, 4) to values (N, 1); s, s2 (N, 4); r, done (N,). optimizer is the critic's
    torch.optim.RMSprop here; the lesson's default is TF-1's RMSProp (gradlab.kit.optim.TFRMSprop), another
    algorithm with the same interface: your code hands either its gradients the same way, through .grad.
    Return nothing: the critic's parameters are updated in place. The check calls your function three times in
    a row and compares the gradient optimizer.step() is given and the parameters after each update.
    """
    with torch.no_grad():
        target = r + gamma * (1 - done) * critic(s2).squeeze(-1)
    v = critic(s).squeeze(-1)
    loss = ((target - v) ** 2).mean()
    params = list(critic.parameters())
    grads = torch.autograd.grad(loss, params)
    for p, g in zip(params, grads):
        p.grad = g
    optimizer.step()
