"""gradlab exercise dqn.td_target (level 1): the DQN target y = r + γ(1 − done) max target(s2), a number with no
graph.

Write the body of td_target below, then check it:

    gradlab check td_target.py
"""

# gradlab-exercise: dqn.td_target
import torch
import torch.nn.functional as F


def td_target(target, r, s2, done, gamma):
    """y = r + γ · (1 − done) · max_a' target(s2)[a']   one number per transition, to move towards

    Computed without a graph (torch.no_grad(), or .detach()): no gradient may flow through y.

    Shapes: target is a network from states (N, 4) to action values (N, 2); r, done (N,) float; s2 (N, 4);
    gamma a float. Return y of shape (N,). done is 1 where the episode terminated (the pole fell, the cart
    left the track) and 0 where the time limit only truncated it: s2 still has a value there, so y
    bootstraps from it.
    TF-1: y = tf.stop_gradient(y), or y computed in a separate session run and fed in as a placeholder.
    """
    with torch.no_grad():
        return r + gamma * (1 - done) * target(s2).max(dim=0).values
