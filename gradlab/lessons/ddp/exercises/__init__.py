"""What students write in `gradlab ddp`: each exercise's text (torch-free: `gradlab exercises` reads it). How a
submission is called is harness.py; its reference, known mistakes and claims are checks.py; model answers are
answers.py."""

from gradlab.practice.exercise import Exercise

EXERCISES = [
    Exercise(
        "accumulated_grad", 2,
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
        "average_gradients", 3,
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
