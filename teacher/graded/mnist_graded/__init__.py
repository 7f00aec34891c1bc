"""mnist's graded variant: the gradient of a per-sample weighted softmax cross-entropy, derived by hand (the skill of
mnist.softmax_grad, whose answer every student's gradlab holds: the lesson's analytic_gradients).

The cost is TF-1's weighted loss with its default reduction: tf.losses' compute_weighted_loss sums w_i · loss_i and,
with Reduction.SUM_BY_NONZERO_WEIGHTS, divides by "number of non-zero weights", through a _safe_div that "returns 0 if
the denominator is zero" (tensorflow/python/ops/losses/losses_impl.py, TF 1.x). Torch-free: the starter and the
pre-flight read it."""

from gradlab.kit.exercise import Exercise

EXERCISES = [
    Exercise(
        function="weighted_softmax_grad", level=2,
        what="the gradient of a per-sample weighted softmax cross-entropy (TF-1's tf.losses weights, divided by the "
             "number of non-zero weights), derived by hand: no autograd",
        signature="def weighted_softmax_grad(W, b, x, y, w):",
        doc="""∂cost/∂W and ∂cost/∂b of a weighted softmax regression cost, from the formulas, without autograd.

        z = x W + b,  p = softmax(z) over the 10 classes,  loss_i = −Σ_k y_ik log p_ik
        cost = Σ_i w_i · loss_i / N,  N = the number of samples whose weight w_i is not 0
        cost = 0 when every weight is 0 (TF-1 divides "safely": nothing to learn from, so no gradient either)

        This is TF-1's tf.losses.compute_weighted_loss(losses, weights) with its default reduction,
        Reduction.SUM_BY_NONZERO_WEIGHTS (tensorflow/python/ops/losses/losses_impl.py). A sample of weight 0 is
        padding: it neither counts in N nor moves the gradient. Derive ∂cost/∂z yourself (with every w_i = 1 it
        is (p − y)/B, mnist.softmax_grad's).

        Shapes: W (784, 10), b (10,), x (B, 784), y (B, 10) one-hot, w (B,) weights ≥ 0, some of them exactly 0.
        Return (gW, gb) of shapes (784, 10), (10,); W, b, x, y and w are not changed. The inputs include logits
        far above 88 (exp overflows in float32 there), a batch whose weights are all 0, one sample of weight 3,
        and float64.""",
        claims={"grad": ("your hand-derived gradient ≡ autograd's through the weighted cost, in float64 (largest "
                         "|yours − expected| ÷ max(1, largest |expected|), tensor by tensor, over the inputs)", 1e-5)},
        keeps=("W", "b", "x", "y", "w"), no_autograd=True),
]
