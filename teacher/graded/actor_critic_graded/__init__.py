"""actor_critic_graded: a critic update from explicitly computed gradients whose target is the n-step return of a
segment of steps, terminations inside it included; a graded variant of actor-critic.critic_update (the same skill:
the target cut from the graph, torch.autograd.grad, the gradients handed to the optimizer through .grad, then
step()) whose answer is in no student's gradlab: the lesson's critic and the base exercise's answer use the one-step
target r + γ(1 − done)V(s'). The optimizer is TF-1's centered RMSProp with momentum, the harness's own (written out
in harness.py, checked against gradlab.kit.optim.TFRMSprop(centered=True) by tests/test_graded_rl.py). Torch-free.

Sources: the n-step return with a bootstrap and terminations, time-major, as rlpyt computes it
(astooke/rlpyt, rlpyt/algos/utils.py, discount_return: `return_[-1] = reward[-1] + discount * bootstrap_value *
not_done[-1]`, then `return_[t] = reward[t] + return_[t + 1] * discount * not_done[t]` backwards); the n-step
returns of A3C's critic (Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning", ICML). TF-1's
centered RMSProp: tensorflow/core/kernels/training_ops.cc (ApplyCenteredRMSProp: ms, mg, mom), its slots' starting
values in tensorflow/python/training/rmsprop.py (1.15: ms ones, mg and momentum zeros), as gradlab/kit/optim.py
quotes them.
"""

from gradlab.kit.exercise import Exercise

EXERCISES = [
    Exercise(
        function="critic_update", level=3,
        what="one critic update towards n-step returns over a segment of steps: the gradients into .grad, then "
             "optimizer.step()",
        signature="def critic_update(critic, optimizer, s, r, done, s_last, gamma):",
        doc="""N environments stepped T times in lockstep gave a segment: states s_0 … s_{T−1}, rewards r_t, done_t
        (1 where the episode terminated at step t) and s_last, the state after the last step. Each step's target is
        its n-step return, computed backwards from the critic's value of s_last:

        R_T = V(s_last)                                  a number: no gradient through it
        R_t = r_t + γ · (1 − done_t) · R_{t+1}           for t = T−1 … 0 (a termination cuts the sum there)
        loss  = mean over t and environments of (R_t − V(s_t))²
        grads = torch.autograd.grad(loss, critic.parameters());  p.grad = g for each;  optimizer.step()
        (or zero_grad, loss.backward(), step(): the check compares what step() is given, not how it got there)

        Shapes: critic maps states (…, 4) to values (…, 1), float64; s (T, N, 4); r, done (T, N); s_last (N, 4);
        gamma a float. optimizer is TF-1's centered RMSProp (tf.train.RMSPropOptimizer(0.01, momentum=0.9,
        centered=True)): hand it the gradients through .grad, as any torch optimizer. Return nothing: the
        critic's parameters are updated in place. The check calls your function three times in a row (three
        segments) and compares the gradient step() is given and the parameters after each update; it runs, among
        others, a segment with a termination in its middle, one whose last step terminates, one step (T = 1) and
        γ = 0.""",
        claims={"critic": ("3 updates with your function ≡ with autograd's gradient of the n-step loss, float64 "
                           "(largest |yours − expected| ÷ max(1, largest |expected|), tensor by tensor: the gradients "
                           "given to step() and the parameters)", 1e-9)}),
]
