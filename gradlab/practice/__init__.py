"""Practice: students write the gradient code, and `gradlab check` grades it with the lesson's own claims.

This index imports nothing heavy (`gradlab exercises` and the starter files read it). Each exercise's inputs, its
reference answer, its known mistakes (each a realistic wrong implementation with its diagnosis) and the harness that
calls the student's function live in gradlab/practice/exercises.py; the student's code runs in a separate process
(gradlab/practice/sandbox.py) and only its outputs come back: the reference values are computed here, in the
gradlab process, so code under test cannot make a check pass by changing gradlab.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Exercise:
    name: str  # lesson.function
    lesson: str
    function: str  # what the student writes
    level: int  # 1 warm-up, 2 the lesson's point, 3 harder
    what: str  # one line: what to write
    signature: str
    doc: str  # the math, the shapes, the TF-1 line it replaces


EXERCISES: dict[str, Exercise] = {e.name: e for e in [
    Exercise(
        "mnist.sgd_step", "mnist", "sgd_step", 1,
        "one SGD step of softmax regression with torch.autograd.grad, then W -= lr·g",
        "def sgd_step(W, b, x, y, lr):",
        """One gradient-descent step of softmax regression, by hand.

        z = x W + b;  cost = mean_i(−Σ_k y_ik log softmax(z)_ik)   (the mean over the batch)
        gW, gb = ∂cost/∂W, ∂cost/∂b                              with torch.autograd.grad
        return W − lr·gW, b − lr·gb                               new tensors; W and b are not changed

        Shapes: W (784, 10), b (10,), x (B, 784), y (B, 10) one-hot, lr a float. W and b arrive with
        requires_grad=True. TF-1: grad_W, grad_b = tf.gradients(cost, [W, b]); W.assign(W - lr * grad_W)."""),
    Exercise(
        "clip.clip_by_global_norm", "clip", "clip_by_global_norm", 2,
        "clip a list of gradients by their global norm, as tf.clip_by_global_norm",
        "def clip_by_global_norm(grads, clip_norm):",
        """Scale every gradient by one factor so that their global norm is at most clip_norm.

        global_norm = sqrt(Σ_i ‖g_i‖²)                    over every tensor of the list together
        g_i ← g_i · clip_norm / max(global_norm, clip_norm)  one scale for all: the direction is kept

        Shapes: grads, a list of tensors of any shapes; clip_norm a positive float. Return a new list of tensors
        of the same shapes. TF-1: clipped, _ = tf.clip_by_global_norm(grads, clip_norm)."""),
    Exercise(
        "ddp.accumulated_grad", "ddp", "accumulated_grad", 2,
        "the gradient of one batch accumulated over micro-batches of any sizes, ≡ the whole batch's",
        "def accumulated_grad(model, x, y, sizes):",
        """The gradient of the mean cross-entropy over the whole batch, computed micro-batch by micro-batch.

        g = (1/B) Σ_i ∇ℓ_i = Σ_k (n_k/B) · ḡ_k             for micro-batches of n_1 … n_K samples
        for each part k: loss_k = Σ_{i in k} ℓ_i / B; loss_k.backward()   (.backward() adds into .grad)

        Shapes: model a torch.nn.Module (its .grad may hold anything on entry), x (B, 784), y (B,) class numbers,
        sizes a list of K part sizes that add up to B (they may differ: 64, 32, 4). Use F.cross_entropy. Return
        [p.grad for p in model.parameters()] after the last part. TF-1 had no .grad: accumulation was written by
        hand with tf.Variable accumulators."""),
]}
