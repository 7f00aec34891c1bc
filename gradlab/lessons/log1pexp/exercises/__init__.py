"""What students write in `gradlab log1pexp`: each exercise's text and what its checks claim (torch-free: `gradlab
exercises` and the pre-flight of `gradlab check` read it). How a submission is called is harness.py; its reference,
known mistakes and what the diagnosis measures are checks.py; model answers are answers.py.

The TF-1 sentences: the tutorial's custom gradient is TF's own docstring example (tensorflow/python/ops/
custom_gradient.py, v1.12.0 lines 65-73: `e = tf.exp(x)` / `def grad(dy): return dy * (1 - 1 / (1 + e))`); in TF-1's
graph mode e is the graph tensor Exp(x), and tf.gradients of its gradient gives sigmoid'(x) (read from TF-1's source,
not run here: docs/lessons/log1pexp.md, "The tutorial, TF-1, and the sources"). F.softplus's threshold:
torch/nn/functional.py, softplus ("reverts to the linear function when input × β > threshold", threshold=20)."""

from gradlab.kit.exercise import Exercise

FLOAT64 = ("float64: your value, gradient (for a random dy) and second derivative ≡ the stable formulas (largest "
           "|yours − expected| ÷ max(1, largest |expected|), tensor by tensor; 1e-8 leaves room for F.softplus's "
           "threshold)", 1e-8)

EXERCISES = [
    Exercise(
        function="softplus", level=2,
        what="log(1 + eˣ) as a plain function whose autograd gradient is finite and right everywhere, x = 0 and "
             "±100 included",
        signature="def softplus(x):",
        doc="""softplus(x) = log(1 + eˣ), written with torch operations so that autograd's gradient of it is σ(x) =
        1/(1 + e^−x) everywhere: no NaN at x = ±100 in float32, no wrong slope at x = 0. Autograd differentiates
        your formula as written, each branch and each kink included. (The second derivative is not checked here:
        log1pexp.Log1pExp checks it.)

        Shapes: x any shape, float32 or float64. F.softplus computes this (the check compares yours with the closed
        forms): write it yourself here. TF-1: tf.nn.softplus; the tutorial wrote log(1 + exp(x)) and got NaN.""",
        claims={"float32": ("float32: your value and autograd's gradient of it (for a random dy) ≡ the stable formulas "
                            "(largest |yours − expected| ÷ max(1, largest |expected|), tensor by tensor)", 1e-6),
                "float64": ("float64: the same (largest |yours − expected| ÷ max(1, largest |expected|), tensor by "
                            "tensor; 1e-8 leaves room for F.softplus's threshold)",
                            1e-8)},
        forbidden=("torch.nn.functional.softplus", "torch.ops.aten.softplus")),
    Exercise(
        function="Log1pExp", level=3,
        what="log(1 + eˣ) as a torch.autograd.Function: no overflow at x = 100 in float32, a right second derivative",
        signature="class Log1pExp(torch.autograd.Function):",
        doc="""forward(ctx, x) = log(1 + eˣ), computed so that it never overflows: max(x, 0) + log1p(exp(−|x|))
        backward(ctx, dy) = dy · sigmoid(x), written with differentiable torch ops on the saved x, so that the
        second derivative (sigmoid'(x)) is right too. The check sends a random upstream gradient dy.

        Shapes: x any shape, float32 or float64. TF-1: @tf.custom_gradient, whose backward dy · (1 − 1/(1 + e))
        was built from the graph tensor e = tf.exp(x), so a second tf.gradients differentiated it. Keeping e from
        forward on ctx instead makes it a constant to autograd: a second derivative then raises or silently
        drops the f'' term, and the check measures it as 0.""",
        claims={"float32": ("float32: your value, gradient (for a random dy) and second derivative ≡ the stable "
                            "reference (largest |yours − expected| ÷ max(1, largest |expected|), tensor by "
                            "tensor)", 1e-6),
                "float64": FLOAT64},
        rules=(("no NaN or inf at x = 100 in float32 (value and gradient; count)", 0, "<="),)),
]
