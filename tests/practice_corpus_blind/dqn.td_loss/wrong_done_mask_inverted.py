"""gradlab exercise dqn.td_loss (level 2): the DQN loss with the target cut from the graph (stop_gradient),
terminal transitions included.

Write the body of td_loss below, then check it:

    gradlab check td_loss.py
"""

# gradlab-exercise: dqn.td_loss
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    """y = r + γ · (1 − done) · max_a' target(s2)[a'],  a number to move towards: no gradient through it
    loss = mean_i Huber(online(s)[i, a_i] − y_i)        F.smooth_l1_loss(q, y)

    Shapes: online and target are networks from states (N, 4) to action values (N, 2); s, s2 (N, 4); a (N,)
    int64; r, done (N,) float. done is 1 where the episode terminated (the pole fell, the cart
    left the track) and 0 where the time limit only truncated it: s2 still has a value there, so y
    bootstraps from it.
    Return the loss (a 0-dim tensor) with the graph to online's parameters. TF-1: y = tf.stop_gradient(y),
    or y fed in as a placeholder.
    """
    with torch.no_grad():
        y = r + gamma * done * target(s2).max(dim=1).values
    q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
    return F.smooth_l1_loss(q, y)
