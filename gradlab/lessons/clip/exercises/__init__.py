"""What students write in `gradlab clip`: each exercise's text and what its checks claim (torch-free: `gradlab
exercises` and the pre-flight of `gradlab check` read it). How a submission is called is harness.py; its reference,
known mistakes and what the diagnosis measures are checks.py; model answers are answers.py.

TF-1's functions, as tensorflow/python/ops/clip_ops.py (v1.15.0) documents them: tf.global_norm "global_norm =
sqrt(sum([l2norm(t)**2 for t in t_list]))"; tf.clip_by_global_norm sets "t_list[i] * clip_norm / max(global_norm,
clip_norm)". torch.nn.utils.clip_grad_norm_ divides by total_norm + 1e-6 (torch/nn/utils/clip_grad.py).
"""

from gradlab.kit.exercise import Exercise

EXERCISES = [
    Exercise(
        function="global_norm", level=1,
        what="the global norm of a list of gradients, as tf.global_norm: one number for all the tensors",
        signature="def global_norm(grads):",
        doc="""The L2 norm of every entry of every tensor of the list, together:

        global_norm = sqrt(Σ_i ‖g_i‖²) = sqrt(Σ_i Σ_j g_ij²)

        Shapes: grads, a list of tensors of any shapes (they differ: (784, 10), (10,), (256, 256)…). Return a
        0-dim tensor; the gradients are not changed. torch.nn.utils.get_total_norm computes this (the check
        compares yours with it): write it yourself here. TF-1: tf.global_norm(t_list).""",
        claims={"norm": ("your global norm ≡ torch.nn.utils.get_total_norm's (largest |yours − expected| ÷ max(1, "
                         "largest |expected|), tensor by tensor, over the inputs)",
                         1e-5)},
        keeps=("grads",),
        forbidden=("torch.nn.utils.get_total_norm", "torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_norm")),
    Exercise(
        function="clip_by_global_norm", level=2,
        what="clip a list of gradients by their global norm, as tf.clip_by_global_norm",
        signature="def clip_by_global_norm(grads, clip_norm):",
        doc="""Scale every gradient by one factor so that their global norm is at most clip_norm.

        global_norm = sqrt(Σ_i ‖g_i‖²)                    over every tensor of the list together
        g_i ← g_i · clip_norm / max(global_norm, clip_norm)  one scale for all: the direction is kept

        Shapes: grads, a list of tensors of any shapes; clip_norm a positive float. Return a new list of tensors
        of the same shapes; the tensors you were given are not changed. torch.nn.utils.clip_grad_norm_ does this
        to parameters' .grad (the check compares yours with it): write it yourself here. TF-1: clipped, _ =
        tf.clip_by_global_norm(grads, clip_norm).""",
        claims={"clip": ("your clipped gradients ≡ torch.nn.utils.clip_grad_norm_'s (largest |yours − expected| ÷ "
                         "max(1, largest |expected|), tensor by tensor, over the inputs)", 1e-5)},
        rules=(("after your clipping the global norm is at most clip_norm (max of norm / clip_norm)", 1 + 1e-5,
                "<="),
               ("the direction is kept: cosine between clipped and original gradients (min)", 1 - 1e-6, ">=")),
        keeps=("grads",),
        forbidden=("torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_norm", "torch.nn.utils.get_total_norm")),
    Exercise(
        function="clip_across_ranks", level=3, on_workers=True,
        what="clip by the global norm when every rank holds a different shard of the gradients: all-reduce the "
             "squared norms, on real gloo workers",
        signature="def clip_across_ranks(grads, clip_norm):",
        doc="""Called on every worker of a torch.distributed job (gloo, on this machine) at the same time. Each rank
        holds the gradients of its own shard of the model's parameters (they differ in number and shape from rank
        to rank); clip them all by the global norm of the whole model:

        s_r = Σ_{g in this rank's grads} ‖g‖²           this rank's part of the squared norm
        S = Σ_r s_r                                    dist.all_reduce(s, op=dist.ReduceOp.SUM), on every rank
        g ← g · clip_norm / max(sqrt(S), clip_norm)    the same scale on every rank

        Shapes: grads, this rank's list of tensors (float64); clip_norm a positive float. Return the list of clipped
        tensors. TF-1's tf.clip_by_global_norm received the whole list of gradients in one graph (TF moved tensors
        between devices itself); when each process holds only its shard of the gradients, the squared norms must be
        all-reduced first.""",
        claims={"ranks": ("on real gloo workers, every rank's clipped shard ≡ the whole model's gradients clipped "
                          "together (largest |yours − expected| ÷ max(1, largest |expected|), tensor by "
                          "tensor)", 1e-9)},
        forbidden=("torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_norm")),
]
