"""What students write in `gradlab dqn`: each exercise's text (torch-free: `gradlab exercises` reads it). How a
submission is called is harness.py; its reference, known mistakes and claims are checks.py; model answers are
answers.py."""

from gradlab.practice.exercise import Exercise

EXERCISES = [
    Exercise(
        "td_loss", 2,
        "the DQN loss with the target cut from the graph (stop_gradient), terminal transitions included",
        "def td_loss(online, target, s, a, r, s2, done, gamma):",
        """y = r + γ · (1 − done) · max_a' target(s2)[a'],  a number to move towards: no gradient through it
        loss = mean_i Huber(online(s)[i, a_i] − y_i)        F.smooth_l1_loss(q, y)

        Shapes: online and target are networks from states (N, 4) to action values (N, 2); s, s2 (N, 4); a (N,)
        int64; r, done (N,) float. done is 1 where the episode terminated (the pole fell, the cart left the track)
        and 0 where the time limit only truncated it: s2 still has a value there, so y bootstraps from it. Return
        the loss (a 0-dim tensor) with the graph to online's parameters. TF-1: y = tf.stop_gradient(y), or y fed
        in as a placeholder."""),
]
