"""The teacher's own exercise: what students write (gradlab.practice.classroom.own). Torch-free: the starter and the
pre-flight
read it."""

from gradlab.kit.exercise import Exercise

EXERCISES = [
    Exercise(
        function="mse_grad", level=2,
        what="the gradient of linear regression's mean squared error, from the formula, no autograd",
        signature="def mse_grad(w, b, X, y):",
        doc="""∂cost/∂w and ∂cost/∂b of cost = mean_i (X_i·w + b − y_i)², derived by hand:

        r = Xw + b − y               the residuals, shape (N,)
        ∂cost/∂w = 2 Xᵀr / N         shape (D,)
        ∂cost/∂b = 2 mean(r)         a 0-dim tensor

        Shapes: w (D,), b a 0-dim tensor, X (N, D), y (N,). Return (∂cost/∂w, ∂cost/∂b); no autograd, and the
        inputs are not changed.""",
        claims={"grad": ("your ∂cost/∂w and ∂cost/∂b ≡ autograd's (largest |yours − expected| ÷ max(1, largest "
                         "|expected|), tensor by tensor, over the inputs)", 1e-5)},
        keeps=("w", "b", "X", "y"),
        no_autograd=True),
]
