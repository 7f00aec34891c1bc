"""What students write in `gradlab actor-critic`: each exercise's text (torch-free: `gradlab exercises` reads it). How a
submission is called is harness.py; its reference, known mistakes and claims are checks.py; model answers are
answers.py."""

from gradlab.practice.exercise import Exercise

EXERCISES = [
    Exercise(
        "critic_update", 2,
        "one critic update from explicitly computed gradients: autograd.grad, into .grad, then optimizer.step()",
        "def critic_update(critic, optimizer, s, r, s2, done, gamma):",
        """One step of the critic V, the tutorial's tf.gradients + RMSProp.apply_gradients:

        target = r + γ · (1 − done) · V(s2)     a number: no gradient through it
        loss   = mean_i (target_i − V(s)_i)²
        grads  = torch.autograd.grad(loss, critic.parameters());  p.grad = g for each;  optimizer.step()

        Shapes: critic maps states (N, 4) to values (N, 1); s, s2 (N, 4); r, done (N,). optimizer is the critic's
        torch.optim.RMSprop here; the lesson's default is TF-1's RMSProp (gradlab.optim.TFRMSprop), another
        algorithm with the same interface: your code hands either its gradients the same way, through .grad.
        Return nothing: the critic's parameters are updated in place."""),
]
