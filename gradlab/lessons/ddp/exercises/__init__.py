"""What students write in `gradlab ddp`: each exercise's text and what its checks claim (torch-free: `gradlab
exercises` and the pre-flight of `gradlab check` read it). How a submission is called is harness.py; its reference,
known mistakes and what the diagnosis measures are checks.py; model answers are answers.py.

The texts' statements about TF-1, Horovod and PyTorch, with their sources:
  * `.backward()` adds into .grad: "This function accumulates gradients in the leaves - you might need to zero
    .grad attributes or set them to None before calling it." (torch/_tensor.py, Tensor.backward).
  * DDP averages the ranks' gradients: "the gradients between different nodes are averaged"
    (torch/nn/parallel/distributed.py, the DistributedDataParallel docstring's note on a summed loss).
  * tf.gradients returns new tensors: "It returns a list of `Tensor` of length `len(xs)` where each tensor is the
    `sum(dy/dx)` for y in `ys`." (tensorflow/python/ops/gradients_impl.py, 1.15); tf.ConditionalAccumulator: "A
    conditional accumulator for aggregating gradients." (tensorflow/python/ops/data_flow_ops.py, 1.15).
  * tf.contrib.nccl.all_sum, TF 1.0 to 1.12 (tensorflow/contrib/nccl/python/ops/nccl_ops.py: "Returns a list of
    tensors with the all-reduce sum across `tensors`."; moved to core in 1.13, RELEASE.md: "Moved NCCL to core.");
    tf.contrib.distribute.MirroredStrategy from 1.8 (RELEASE.md, Release 1.8.0: "Can now pass
    `tf.contrib.distribute.MirroredStrategy()` to `tf.estimator.RunConfig()` to run an Estimator model on multiple
    GPUs on one machine.").
  * Horovod averages by default: `def allreduce(tensor, average=True, ...)`, "average: If True, computes the
    average over all ranks. Otherwise, computes the sum over all ranks." (horovod/tensorflow/__init__.py, v0.13.0);
    "Defaults to Average if None is given." (horovod/torch/mpi_ops.py, v0.28.1).
"""

from gradlab.kit.exercise import Exercise

EXERCISES = [
    Exercise(
        function="sync_gradients", level=1, on_workers=True,
        what="average every parameter's .grad over the workers in place, as DistributedDataParallel does, on real "
             "gloo workers",
        signature="def sync_gradients(model):",
        doc="""Called on every worker of a torch.distributed job (gloo, on this machine) at the same time, after each
        worker's backward on its own shard (the shards are equal): make every p.grad the mean over the workers.

        for each parameter p:  dist.all_reduce(p.grad, op=dist.ReduceOp.SUM);  p.grad /= world size

        Shapes: model a torch.nn.Module whose parameters' .grad hold this worker's gradients. Change them in place
        and return nothing. DistributedDataParallel does this during backward ("the gradients between different
        nodes are averaged", its docstring): write it by hand here. TF-1: tf.contrib.nccl.all_sum (1.0 to 1.12)
        summed across GPUs; Horovod's hvd.allreduce averages by default.""",
        claims={"sync": ("on real gloo workers, every rank's .grad ≡ the mean of the workers' gradients (largest "
                         "|yours − expected| ÷ max(1, largest |expected|), tensor by tensor)", 1e-6)}),
    Exercise(
        function="accumulated_grad", level=2,
        what="the gradient of one batch accumulated over micro-batches of any sizes, ≡ the whole batch's",
        signature="def accumulated_grad(model, x, y, sizes):",
        doc="""The gradient of the mean cross-entropy over the whole batch, computed micro-batch by micro-batch.

        g = (1/B) Σ_i ∇ℓ_i = Σ_k (n_k/B) · ḡ_k             for micro-batches of n_1 … n_K samples
        for each part k: loss_k = Σ_{i in k} ℓ_i / B; loss_k.backward()   (.backward() adds into .grad)

        Shapes: model a torch.nn.Module (its .grad may hold anything on entry), x (B, 784), y (B,) class numbers,
        sizes a list of K part sizes that add up to B (they may differ: 64, 32, 4). Use F.cross_entropy. Return
        [p.grad for p in model.parameters()] after the last part. TF-1 had no .grad that adds up: tf.gradients
        returns new tensors at every call, so accumulating them took variables of your own (assign_add) or
        tf.ConditionalAccumulator ("for aggregating gradients").""",
        claims={"equal": ("equal parts: your accumulated gradient ≡ one backward over the whole batch (largest |yours "
                          "− expected| ÷ max(1, largest |expected|), tensor by tensor)", 1e-5),
                "unequal": ("unequal parts: your accumulated gradient ≡ one backward over the whole batch (largest "
                            "|yours − expected| ÷ max(1, largest |expected|), tensor by tensor)", 1e-5)}),
    Exercise(
        function="average_gradients", level=3, on_workers=True,
        what="the global gradient from uneven shards with torch.distributed.all_reduce, run on real gloo workers",
        signature="def average_gradients(grads, n_local, n_total):",
        doc="""Called on every worker of a torch.distributed job (gloo, on this machine) at the same time. Each
        worker holds ḡ_r, the mean gradient of its own shard of n_r samples; return g, the mean gradient of the
        whole batch of B samples, on every worker:

        g = Σ_r (n_r / B) · ḡ_r          dist.all_reduce(t, op=dist.ReduceOp.SUM) adds t over the workers

        Shapes: grads, a list of tensors (this worker's ḡ_r); n_local = n_r; n_total = B. The shards may differ
        (34, 33, 33). Return a list of tensors of the same shapes. TF-1 had all-reduce too
        (tf.contrib.nccl.all_sum from 1.0, summing across GPUs; tf.contrib.distribute.MirroredStrategy from 1.8),
        and Horovod's hvd.allreduce averages by default: equal weights, right for equal shards only.""",
        claims={"average": ("on real gloo workers, every worker's result ≡ the whole batch's gradient Σ_r (n_r/B)·ḡ_r "
                            "(largest |yours − expected| ÷ max(1, largest |expected|), tensor by tensor)", 1e-12)}),
]
