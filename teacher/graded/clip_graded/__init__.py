"""clip's graded variant: TF-1's tf.clip_by_norm with `axes`, one norm per slice, and a gradient that stays finite at
an all-zero slice (the skill of clip.global_norm and clip.clip_by_global_norm, whose answers every student's gradlab
holds: the clip lesson's global_norm, clip_by_global_norm and clip_by_norm, each one norm for a whole tensor or list).

tensorflow/python/ops/clip_ops.py, clip_by_norm(t, clip_norm, axes): "axes: ... the dimensions to use for computing
the L2-norm. If None (the default), uses all dimensions"; it computes l2sum = reduce_sum(t * t, axes, keepdims=True),
then the norm with a "Two-tap tf.where trick to bypass NaN gradients" (where(l2sum > 0, sqrt(where(l2sum > 0, l2sum,
1)), l2sum)), and returns t * clip_norm / maximum(l2norm, clip_norm). Torch-free: the starter and the pre-flight read
it."""

from gradlab.kit.exercise import Exercise

EXERCISES = [
    Exercise(
        function="clip_by_norm", level=2,
        what="clip every slice of a tensor by its own L2 norm along the given axes, as TF-1's tf.clip_by_norm(t, "
             "clip_norm, axes), with a gradient that is finite everywhere",
        signature="def clip_by_norm(t, clip_norm, axes):",
        doc="""One norm per slice: the L2 norm over the dimensions in axes, the other dimensions kept.

        n = sqrt(Σ_{axes} t²)                     shape: t's, with each dimension of axes reduced to 1
        t ← t · clip_norm / max(n, clip_norm)      each slice scaled by its own factor; a slice whose norm is
                                                   at most clip_norm is left as it is

        e.g. t of shape (6, 5) and axes = (1,): six rows, each clipped by its own norm. TF-1:
        tf.clip_by_norm(t, clip_norm, axes) (tensorflow/python/ops/clip_ops.py).

        Write it with torch operations on t: the check differentiates your function with autograd (for a random
        upstream gradient dy), so its gradient must be right and finite everywhere, at a slice that is all zeros
        too (TF-1 computes its norm with a "two-tap tf.where trick to bypass NaN gradients").

        Shapes: t any shape, float32 or float64; clip_norm a positive float; axes a tuple of dimensions (possibly
        negative, possibly all of them). Return a tensor of t's shape. The inputs: rows, columns, (4, 5) slices of
        a 3-D tensor, the whole tensor, the last axis, slices above and below clip_norm, norms in the thousands,
        an all-zero row and an all-zero tensor.""",
        claims={"float32": ("float32: your clipped tensor and autograd's gradient of it (for a random dy) ≡ the closed "
                            "forms computed in float64 (largest |yours − expected| ÷ max(1, largest |expected|), "
                            "tensor by tensor)", 1e-5),
                "float64": ("float64: the same (largest |yours − expected| ÷ max(1, largest |expected|), tensor by "
                            "tensor)", 1e-10)},
        rules=(("every slice's norm after your clipping is at most clip_norm (max of norm / clip_norm)", 1 + 1e-5,
                "<="),),
        forbidden=("torch.renorm", "torch.Tensor.renorm", "torch.Tensor.renorm_")),
]
