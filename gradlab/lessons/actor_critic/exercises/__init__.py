"""What students write in `gradlab actor-critic`: each exercise's text and what its checks claim (torch-free:
`gradlab exercises` and the pre-flight of `gradlab check` read it). How a submission is called is harness.py; its
reference, known mistakes and what the diagnosis measures are checks.py; model answers are answers.py.

The tutorial's critic (the tutorial's CriticNetwork, as the lesson's docstring quotes it): td = td_target − V(s), loss =
mean(td²), grads = tf.gradients(loss, params), RMSPropOptimizer(lr).apply_gradients(zip(grads, params)). The actor's
loss with δ detached is the lesson's own (gradlab/lessons/actor_critic/lesson.py docstring).
"""

from gradlab.kit.exercise import Exercise

EXERCISES = [
    Exercise(
        function="actor_loss", level=1,
        what="the actor's loss −mean(ln π(a|s) · δ) with the advantage δ cut from the critic's graph",
        signature="def actor_loss(actor, critic, s, a, r, s2, done, gamma):",
        doc="""δ = r + γ · (1 − done) · V(s2) − V(s)     the TD error, the advantage: a number to the actor
        loss = −mean_i ln π(a_i | s_i) · δ_i       ln π from log_softmax(actor(s)), the taken action's entry

        No gradient may reach the critic through δ (torch.no_grad(), or .detach()). No entropy term here.

        Shapes: actor maps states (N, 4) to action logits (N, 2); critic maps states (N, 4) to values (N, 1);
        s, s2 (N, 4); a (N,) int64; r, done (N,) float. Return the loss (a 0-dim tensor) with the graph to the
        actor's parameters. TF-1: the advantage fed in through a placeholder, or tf.stop_gradient(td).""",
        claims={"actor": ("your loss and its gradients ≡ the detached-advantage loss's (largest |yours − expected| ÷ "
                          "max(1, largest |expected|), tensor by tensor)", 1e-5)}),
    Exercise(
        function="critic_update", level=2,
        what="one critic update, TF-1's compute_gradients + apply_gradients: the gradients into .grad, then "
             "optimizer.step()",
        signature="def critic_update(critic, optimizer, s, r, s2, done, gamma):",
        doc="""One step of the critic V, the tutorial's tf.gradients + RMSProp.apply_gradients:

        target = r + γ · (1 − done) · V(s2)     a number: no gradient through it
        loss   = mean_i (target_i − V(s)_i)²
        grads  = torch.autograd.grad(loss, critic.parameters());  p.grad = g for each;  optimizer.step()
        (optimizer.zero_grad(); loss.backward(); optimizer.step() hands step() the same gradients: the check
        compares what step() is given, not how it got there)

        Shapes: critic maps states (N, 4) to values (N, 1); s, s2 (N, 4); r, done (N,). optimizer is the critic's
        torch.optim.RMSprop here; the lesson's default is TF-1's RMSProp (gradlab.kit.optim.TFRMSprop), another
        algorithm with the same interface: your code hands either its gradients the same way, through .grad.
        Return nothing: the critic's parameters are updated in place. The check calls your function three times in
        a row and compares the gradient optimizer.step() is given and the parameters after each update.""",
        claims={"critic": ("3 updates with your function ≡ with the explicit-gradient update, torch's RMSprop (largest "
                           "|yours − expected| ÷ max(1, largest |expected|), tensor by tensor: the gradients given to "
                           "step() and the parameters)", 1e-5)}),
]
