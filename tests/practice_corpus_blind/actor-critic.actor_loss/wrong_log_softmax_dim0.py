"""gradlab exercise actor-critic.actor_loss (level 1): the actor's loss −mean(ln π(a|s) · δ) with the advantage δ
cut from the critic's graph.

Write the body of actor_loss below, then check it:

    gradlab check actor_loss.py
"""

# gradlab-exercise: actor-critic.actor_loss
import torch
import torch.nn.functional as F


def actor_loss(actor, critic, s, a, r, s2, done, gamma):
    """δ = r + γ · (1 − done) · V(s2) − V(s)     the TD error, the advantage: a number to the actor
    loss = −mean_i ln π(a_i | s_i) · δ_i       ln π from log_softmax(actor(s)), the taken action's entry

    No gradient may reach the critic through δ (torch.no_grad(), or .detach()). No entropy term here.

    Shapes: actor maps states (N, 4) to action logits (N, 2); critic maps states (N, 4) to values (N, 1);
    s, s2 (N, 4); a (N,) int64; r, done (N,) float. Return the loss (a 0-dim tensor) with the graph to the
    actor's parameters. TF-1: the advantage fed in through a placeholder, or tf.stop_gradient(td).
    """
    with torch.no_grad():
        v = critic(s).squeeze(-1)
        v2 = critic(s2).squeeze(-1)
        delta = r + gamma * (1 - done) * v2 - v
    logp = F.log_softmax(actor(s), dim=0).gather(1, a.unsqueeze(1)).squeeze(1)
    return -(logp * delta).mean()
