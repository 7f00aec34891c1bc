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


_ALL = [
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
    Exercise(
        "mnist.softmax_grad", "mnist", "softmax_grad", 2,
        "the gradient of softmax regression derived by hand, xᵀ(p − y)/B: no autograd at all",
        "def softmax_grad(W, b, x, y):",
        """∂cost/∂W and ∂cost/∂b of softmax regression, from the formulas, without autograd.

        p = softmax(x W + b);  cost = mean_i(−Σ_k y_ik log p_ik)
        ∂cost/∂z = (p − y)/B,  ∂cost/∂W = xᵀ (p − y)/B,  ∂cost/∂b = mean_i (p − y)

        Shapes: W (784, 10), b (10,), x (B, 784), y (B, 10) one-hot. Return (gW, gb) of shapes (784, 10), (10,).
        TF-1: what tf.gradients(cost, [W, b]) computes for you."""),
    Exercise(
        "jacobian.jacobian_loop", "jacobian", "jacobian_loop", 2,
        "the full Jacobian of f at x by a loop of vector-Jacobian products, one row per output",
        "def jacobian_loop(f, x):",
        """J[i, j] = ∂f_i/∂x_j, one row per output: row i = autograd.grad(f(x)[i], x) (a vector-Jacobian product
        with the unit vector e_i). tf.gradients(f(x), x) returned Σ_i ∂f_i/∂x: the rows summed.

        Shapes: f maps a tensor of shape (n,) to one of shape (m,); x (n,). Return J of shape (m, n)."""),
    Exercise(
        "log1pexp.Log1pExp", "log1pexp", "Log1pExp", 3,
        "log(1 + eˣ) as a torch.autograd.Function: no overflow at x = 100 in float32, a right second derivative",
        "class Log1pExp(torch.autograd.Function):",
        """forward(ctx, x) = log(1 + eˣ), computed so that it never overflows: max(x, 0) + log1p(exp(−|x|))
        backward(ctx, dy) = dy · sigmoid(x), written with differentiable torch ops on the saved x, so that the
        second derivative (sigmoid'(x)) is right too.

        Shapes: x any shape, float32 or float64. TF-1: @tf.custom_gradient, whose backward used the saved e = eˣ
        (a constant to autograd: its second derivative came out 0)."""),
    Exercise(
        "gaussian-policy.score", "gaussian-policy", "score", 1,
        "the score of a Gaussian policy, ∂ln π/∂μ and ∂ln π/∂σ, in closed form",
        "def score(a, mu, sigma):",
        """The gradient of ln N(a; μ, σ²) with respect to μ and σ, from the formulas:

        ∂ln π/∂μ = (a − μ)/σ²,   ∂ln π/∂σ = ((a − μ)² − σ²)/σ³

        Shapes: a, mu, sigma of the same shape (one number per action dimension, or a batch); sigma > 0. Return
        (d_mu, d_sigma). TF-1: the tutorial's custom-gradient layer returned these as the backward of ln π."""),
    Exercise(
        "dqn.td_loss", "dqn", "td_loss", 2,
        "the DQN loss with the target cut from the graph (stop_gradient), terminal transitions included",
        "def td_loss(online, target, s, a, r, s2, done, gamma):",
        """y = r + γ · (1 − done) · max_a' target(s2)[a'],  a number to move towards: no gradient through it
        loss = mean_i Huber(online(s)[i, a_i] − y_i)        F.smooth_l1_loss(q, y)

        Shapes: online and target are networks from states (N, 4) to action values (N, 2); s, s2 (N, 4); a (N,)
        int64; r, done (N,) float (done 1 where the episode ended). Return the loss (a 0-dim tensor) with the
        graph to online's parameters. TF-1: y = tf.stop_gradient(y), or y fed in as a placeholder."""),
    Exercise(
        "actor-critic.critic_update", "actor-critic", "critic_update", 2,
        "one critic update from explicitly computed gradients: autograd.grad, into .grad, then RMSprop",
        "def critic_update(critic, optimizer, s, r, s2, done, gamma):",
        """One step of the critic V, the tutorial's tf.gradients + RMSProp.apply_gradients:

        target = r + γ · (1 − done) · V(s2)     a number: no gradient through it
        loss   = mean_i (target_i − V(s)_i)²
        grads  = torch.autograd.grad(loss, critic.parameters());  p.grad = g for each;  optimizer.step()

        Shapes: critic maps states (N, 4) to values (N, 1); s, s2 (N, 4); r, done (N,). optimizer is the critic's
        torch.optim.RMSprop. Return nothing: the critic's parameters are updated in place."""),
    Exercise(
        "ddp.average_gradients", "ddp", "average_gradients", 3,
        "the global gradient from uneven shards with torch.distributed.all_reduce, run on real gloo workers",
        "def average_gradients(grads, n_local, n_total):",
        """Called on every worker of a torch.distributed job (gloo, on this machine) at the same time. Each
        worker holds ḡ_r, the mean gradient of its own shard of n_r samples; return g, the mean gradient of the
        whole batch of B samples, on every worker:

        g = Σ_r (n_r / B) · ḡ_r          dist.all_reduce(t, op=dist.ReduceOp.SUM) adds t over the workers

        Shapes: grads, a list of tensors (this worker's ḡ_r); n_local = n_r; n_total = B. The shards may differ
        (34, 33, 33). Return a list of tensors of the same shapes. TF-1 had no all-reduce of its own: Horovod
        added one (hvd.allreduce, which averages with equal weights)."""),
]


def _teaching_order(e: Exercise) -> tuple[int, int]:
    from gradlab.lessons import LESSONS

    return list(LESSONS).index(e.lesson), e.level


EXERCISES: dict[str, Exercise] = {e.name: e for e in sorted(_ALL, key=_teaching_order)}  # lesson by lesson


def listing() -> list[dict]:
    """Every exercise as {"name", "lesson", "function", "level", "what"}: `gradlab exercises` and the API."""
    return [{"name": e.name, "lesson": e.lesson, "function": e.function, "level": e.level, "what": e.what}
            for e in EXERCISES.values()]
