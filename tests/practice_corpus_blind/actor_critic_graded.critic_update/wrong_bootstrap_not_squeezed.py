"""gradlab exercise actor_critic_graded.critic_update (level 3): one critic update towards n-step returns over a
segment of steps: autograd.grad, into .grad, then optimizer.step().

Write the body of critic_update below, then hand it in as ac_critic_update.py: your teacher checks it with the course's own checks,

    gradlab check ac_critic_update.py --course course.toml
"""

# gradlab-exercise: actor_critic_graded.critic_update
import torch
import torch.nn.functional as F


def critic_update(critic, optimizer, s, r, done, s_last, gamma):
    """N environments stepped T times in lockstep gave a segment: states s_0 … s_{T−1}, rewards r_t, done_t
    (1 where the episode terminated at step t) and s_last, the state after the last step. Each step's target is
    its n-step return, computed backwards from the critic's value of s_last:

    R_T = V(s_last)                                  a number: no gradient through it
    R_t = r_t + γ · (1 − done_t) · R_{t+1}           for t = T−1 … 0 (a termination cuts the sum there)
    loss  = mean over t and environments of (R_t − V(s_t))²
    grads = torch.autograd.grad(loss, critic.parameters());  p.grad = g for each;  optimizer.step()

    Shapes: critic maps states (…, 4) to values (…, 1), float64; s (T, N, 4); r, done (T, N); s_last (N, 4);
    gamma a float. optimizer is TF-1's centered RMSProp (tf.train.RMSPropOptimizer(0.01, momentum=0.9,
    centered=True)): hand it the gradients through .grad, as any torch optimizer. Return nothing: the
    critic's parameters are updated in place. The check calls your function three times in a row (three
    segments) and compares the gradient step() is given and the parameters after each update; it runs, among
    others, a segment with a termination in its middle, one whose last step terminates, one step (T = 1) and
    γ = 0.
    """
    T = r.shape[0]
    with torch.no_grad():
        R = critic(s_last)
        returns = []
        for t in reversed(range(T)):
            R = r[t] + gamma * (1 - done[t]) * R
            returns.append(R)
        returns.reverse()
        targets = torch.stack(returns)

    v = critic(s).squeeze(-1)
    loss = ((targets - v) ** 2).mean()
    params = list(critic.parameters())
    grads = torch.autograd.grad(loss, params)
    for p, g in zip(params, grads):
        p.grad = g
    optimizer.step()
