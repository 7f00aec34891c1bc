"""What students write in `gradlab mnist`: each exercise's text and what its checks claim (torch-free: `gradlab
exercises` and the pre-flight of `gradlab check` read it). How a submission is called is harness.py; its reference,
known mistakes and what the diagnosis measures are checks.py; model answers are answers.py.

The TF-1 lines quoted are the tutorial's (the tutorial's text, lines 44 and 47:
`pred = tf.nn.softmax(tf.matmul(x, W) + b)`, `cost = tf.reduce_mean(-tf.reduce_sum(y*tf.log(pred),
reduction_indices=1))`).
"""

from gradlab.kit.exercise import Exercise

EXERCISES = [
    Exercise(
        function="sgd_step", level=1,
        what="one SGD step of softmax regression: the gradient by autograd, then W − lr·g",
        signature="def sgd_step(W, b, x, y, lr):",
        doc="""One gradient-descent step of softmax regression, by hand.

        z = x W + b;  cost = mean_i(−Σ_k y_ik log softmax(z)_ik)   (the mean over the batch)
        gW, gb = ∂cost/∂W, ∂cost/∂b                              torch.autograd.grad(cost, [W, b])
        return W − lr·gW, b − lr·gb                               new tensors; W and b are not changed

        Shapes: W (784, 10), b (10,), x (B, 784), y (B, 10) one-hot, lr a float. W and b arrive with
        requires_grad=True. Checked on: a batch of 100, one sample, zero weights (the tutorial's start), lr = 0,
        large weights, logits in the hundreds (float32), and 20 steps of training from zero (float64). Take log
        softmax(z) with F.log_softmax (or F.cross_entropy): at logits in the hundreds the tutorial's
        log(softmax(z)) is log 0 = −inf, 0·(−inf) is NaN, and so is its gradient. TF-1: grad_W, grad_b =
        tf.gradients(xs=[W, b], ys=cost); W.assign(W - lr * grad_W).""",
        claims={"step": ("your step ≡ torch.optim.SGD's step from the same weights, on the cost taken with "
                         "F.log_softmax (largest |yours − expected| ÷ max(1, largest |expected|), tensor by tensor, "
                         "over the inputs)", 1e-5),
                "train": ("20 training steps with your step ≡ with torch.optim.SGD (largest |yours − expected| ÷ "
                          "max(1, largest |expected|), in W and in b)",
                          1e-5)},
        keeps=("W", "b"),
        forbidden=("torch.optim.Optimizer",)),
    Exercise(
        function="softmax_grad", level=2,
        what="the gradient of softmax regression derived by hand, xᵀ(p − y)/B: no autograd at all",
        signature="def softmax_grad(W, b, x, y):",
        doc="""∂cost/∂W and ∂cost/∂b of softmax regression, from the formulas, without autograd.

        p = softmax(x W + b);  cost = mean_i(−Σ_k y_ik log p_ik)
        ∂cost/∂z = (p − y)/B,  ∂cost/∂W = xᵀ (p − y)/B,  ∂cost/∂b = mean_i (p − y)

        Shapes: W (784, 10), b (10,), x (B, 784), y (B, 10) one-hot; W, b, x and y are not changed. Return (gW, gb)
        of shapes (784, 10), (10,). The inputs include logits far above 88, where exp overflows in float32.
        TF-1: what tf.gradients(xs=[W, b], ys=cost) computes for you.""",
        claims={"grad": ("your hand-derived gradient ≡ autograd's (largest |yours − expected| ÷ max(1, largest "
                         "|expected|), tensor by tensor, over the inputs)", 1e-5)},
        keeps=("W", "b", "x", "y"), no_autograd=True),
    Exercise(
        function="LogSoftmax", level=3,
        what="log_softmax as a torch.autograd.Function: stable at logits near 100 and −1000 in float32, its "
             "backward a vector-Jacobian product",
        signature="class LogSoftmax(torch.autograd.Function):",
        doc="""forward(ctx, z) = log softmax(z) along the last dimension, computed so that it never overflows:
                  z − logsumexp(z) = (z − m) − log Σ_j exp(z_j − m),  m = max_j z_j
        backward(ctx, dy) = dy − softmax(z) · Σ_j dy_j   (the Jacobian is I − 1·softmax(z)ᵀ), written with
                  torch operations on the saved z, so that the second derivative is right too.

        Shapes: z (N, K) logits, float32 or float64; dy has z's shape. F.log_softmax computes this (the check
        compares yours with autograd through it): write it yourself here, without F.log_softmax. TF-1: the
        tutorial's cost took tf.log(tf.nn.softmax(z)), which is log 0 = −inf once a probability underflows;
        tf.nn.log_softmax is the stable one.""",
        claims={"float64": ("float64: your value, gradient (for a random dy) and second derivative ≡ autograd through "
                            "F.log_softmax (largest |yours − expected| ÷ max(1, largest |expected|), tensor by "
                            "tensor)", 1e-9),
                "float32": ("float32, logits near 100 and −1000: the same, finite (largest |yours − expected| ÷ max(1, "
                            "largest |expected|), tensor by tensor)", 1e-5)},
        forward="z",
        forbidden=("torch.nn.functional.log_softmax", "torch.log_softmax", "torch.Tensor.log_softmax",
                   "torch.special.log_softmax", "torch._log_softmax", "torch.ops.aten.log_softmax",
                   "torch.ops.aten._log_softmax", "torch.ops.aten.special_log_softmax")),
]
