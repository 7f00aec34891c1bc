"""gradlab exercise dqn_graded.td_loss (level 3): Double DQN's TD loss: the online network picks the next action,
the target network values it, no gradient through the target.

Write the body of td_loss below, then hand it in as dqn_td_loss.py: your teacher checks it with the course's own checks,

    gradlab check dqn_td_loss.py --course course.toml
"""

# gradlab-exercise: dqn_graded.td_loss
import torch
import torch.nn.functional as F


def td_loss(online, target, s, a, r, s2, done, gamma):
    """Double DQN (van Hasselt, Guez & Silver 2016): the next action is chosen by the online network and
    valued by the target network:

    a2_i   = argmax_a' online(s2)[i, a']              ties: the first such action (torch.argmax's rule)
    y_i    = r_i + γ · (1 − done_i) · target(s2)[i, a2_i]     a number to move towards: no gradient through it
    loss   = mean_i Huber(online(s)[i, a_i] − y_i)    F.smooth_l1_loss(q, y)

    done is 1 where the episode terminated and 0 where it runs on (or the time limit only truncated it).

    Shapes: online and target are networks from states (N, 4) to action values (N, 2), float64; s, s2 (N, 4);
    a (N,) int64; r, done (N,) float64; gamma a float. Return the loss (a 0-dim tensor) with the graph to
    online's parameters, and none to target's. The check runs it, among others, where online and target rank
    the actions in opposite orders, where online values both actions the same at every s2, where online =
    target (just synced), with no transition terminal and with every one terminal, for one transition and for
    a batch.
    """
    with torch.no_grad():
        a2 = online(s2).argmax(dim=0)
        q2 = target(s2).gather(1, a2.unsqueeze(1)).squeeze(1)
        y = r + gamma * (1 - done) * q2
    q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
    return F.smooth_l1_loss(q, y)
