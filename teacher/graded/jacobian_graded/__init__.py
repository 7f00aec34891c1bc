"""jacobian's graded variant: the per-sample Jacobians of a batch, one backward pass per output for the whole batch
(the skill of jacobian.jacobian_loop, whose answer every student's gradlab holds: the jacobian lesson's jacobian_loop).

The trick is PyTorch's own advice for a function whose samples are independent: "If you have a function that goes
from (B, N) -> (B, M) instead and are certain that each input produces an independent output, then it's also
sometimes possible to do this without using vmap by summing the outputs and then computing the Jacobian of that
function" (PyTorch's tutorial "Jacobians, Hessians, hvp, vhp, and more: composing function transforms",
docs.pytorch.org/tutorials/intermediate/jacobians_hessians.html). Torch-free: the starter and the pre-flight read it."""

from gradlab.kit.exercise import Exercise

EXERCISES = [
    Exercise(
        function="batch_jacobian", level=3,
        what="every sample's Jacobian of a batched function at once: m vector-Jacobian products for the whole "
             "batch, not one loop per sample",
        signature="def batch_jacobian(f, X):",
        doc="""f maps a batch X of shape (B, n) to f(X) of shape (B, m), each sample on its own: row b of f(X)
        depends on row b of X alone. Return the B per-sample Jacobians,

        J[b, i, j] = ∂f(X)[b, i] / ∂X[b, j]          shape (B, m, n)

        with one backward pass per output i for the whole batch: m of them, not B·m. Because the samples are
        independent, the gradient of Σ_b f(X)[b, i] with respect to X holds, in its row b, row i of sample b's
        Jacobian. (tf.gradients(f(X)[:, i], X) computed exactly that: it sums over the outputs it is given.)

        Shapes: X (B, n) float64, arriving without requires_grad; f is a plain function of a (B, n) tensor. The
        check counts the backward passes that go through f's output (autograd.grad or .backward, each call one
        pass, whatever it is given): at most m. torch.autograd.functional.jacobian, torch.func.jacrev / jacfwd and
        vmap compute this for you: write it with torch.autograd.grad. The inputs: more samples than outputs, more
        outputs than samples, one sample, one output, a square m = n.""",
        claims={"jacobian": ("your per-sample Jacobians ≡ the diagonal blocks of torch.autograd.functional.jacobian's "
                             "whole-batch Jacobian (largest |yours − expected| ÷ max(1, largest |expected|), tensor by "
                             "tensor)", 1e-9)},
        rules=(("m backward passes for the whole batch: passes through f's output (max over the inputs of passes / "
                "m)", 1.0, "<="),),
        forbidden=("torch.autograd.functional.jacobian", "torch.func.jacrev", "torch.func.jacfwd",
                   "torch.func.vmap", "torch.vmap", "torch.func.vjp")),
]
