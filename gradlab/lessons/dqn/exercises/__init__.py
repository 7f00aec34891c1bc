"""What students write in `gradlab dqn`: each exercise's text and what its checks claim (torch-free: `gradlab
exercises` and the pre-flight of `gradlab check` read it). How a submission is called is harness.py; its reference,
known mistakes and what the diagnosis measures are checks.py; model answers are answers.py.

done: gymnasium's step returns terminated and truncated separately ("terminated (bool): Whether the agent reaches the
terminal state", gymnasium/core.py lines 100-106, gymnasium 1.4.0); the lesson stores done = terminated
(dqn/lesson.py: `buffer.add(..., float(terminated))`).
"""

from gradlab.kit.exercise import Exercise

DONE = """done is 1 where the episode terminated (the pole fell, the cart
        left the track) and 0 where the time limit only truncated it: s2 still has a value there, so y
        bootstraps from it."""

EXERCISES = [
    Exercise(
        function="td_target", level=1,
        what="the DQN target y = r + γ(1 − done) max target(s2), a number with no graph",
        signature="def td_target(target, r, s2, done, gamma):",
        doc=f"""y = r + γ · (1 − done) · max_a' target(s2)[a']   one number per transition, to move towards

        Computed without a graph (torch.no_grad(), or .detach()): no gradient may flow through y.

        Shapes: target is a network from states (N, 4) to action values (N, 2); r, done (N,) float; s2 (N, 4);
        gamma a float. Return y of shape (N,). {DONE}
        TF-1: y = tf.stop_gradient(y), or y computed in a separate session run and fed in as a placeholder.""",
        claims={"td": ("your y ≡ r + γ(1 − done) max target(s2) (largest |yours − expected| ÷ max(1, largest "
                       "|expected|), tensor by tensor)", 1e-6)},
        rules=(("your y carries no graph (y.requires_grad; 1 is yes)", 0, "<="),)),
    Exercise(
        function="td_loss", level=2,
        what="the DQN loss with the target cut from the graph (stop_gradient), terminal transitions included",
        signature="def td_loss(online, target, s, a, r, s2, done, gamma):",
        doc=f"""y = r + γ · (1 − done) · max_a' target(s2)[a'],  a number to move towards: no gradient through it
        loss = mean_i Huber(online(s)[i, a_i] − y_i)        F.smooth_l1_loss(q, y)

        Shapes: online and target are networks from states (N, 4) to action values (N, 2); s, s2 (N, 4); a (N,)
        int64; r, done (N,) float. {DONE}
        Return the loss (a 0-dim tensor) with the graph to online's parameters. TF-1: y = tf.stop_gradient(y),
        or y fed in as a placeholder.""",
        claims={"td": ("your loss and its gradients ≡ the stop-gradient TD loss's (largest |yours − expected| ÷ max(1, "
                       "largest |expected|), tensor by tensor)", 1e-5)},
        rules=(("no gradient reaches the target network (largest norm of its gradient)", 0.0, "<="),)),
]
