"""dqn_graded: Double DQN's TD loss, a graded variant of dqn.td_loss (the same skill: a TD loss whose target is cut
from the graph, terminal transitions included) whose answer is in no student's gradlab: dqn.td_loss's model answer
and the lesson's own td_loss take the target network's max, which this target does not. Torch-free (the starter and
the pre-flight read it).

Sources: Double DQN, van Hasselt, Guez & Silver (2016), "Deep Reinforcement Learning with Double Q-learning", AAAI,
section "Double DQN": Y = R + γ Q(S', argmax_a Q(S', a; θ_t); θ⁻_t), the online weights θ_t pick the action and the
target network's θ⁻_t value it. Ties: "If there are multiple maximal values then the indices of the first maximal
value are returned." (torch.argmax's docstring, torch/_torch_docs.py, torch 2.14). The Huber loss is the lesson's
(F.smooth_l1_loss, gradlab/lessons/dqn/lesson.py).
"""

from gradlab.kit.exercise import Exercise

EXERCISES = [
    Exercise(
        function="td_loss", level=3,
        what="Double DQN's TD loss: the online network picks the next action, the target network values it, no "
             "gradient through the target",
        signature="def td_loss(online, target, s, a, r, s2, done, gamma):",
        doc="""Double DQN (van Hasselt, Guez & Silver 2016): the next action is chosen by the online network and
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
        a batch.""",
        # the gradient to target's parameters is compared too (autograd's is 0): a leak fails the claim itself,
        # rather than a rule of its own that course scoring would count as half the points
        # (gradlab.practice.classroom.course)
        claims={"td": ("your loss, its gradient to online's parameters and to target's (0) ≡ autograd through the "
                       "stop-gradient Double DQN loss, float64 (largest |yours − expected| ÷ max(1, largest "
                       "|expected|), tensor by tensor)", 1e-9)}),
]
