"""gradlab exercise jacobian_graded.batch_jacobian (level 3): every sample's Jacobian of a batched function at
once: m vector-Jacobian products for the whole batch, not one loop per sample.

Write it yourself: this exercise is to write what torch.autograd.functional.jacobian, torch.func.jacrev,
torch.func.jacfwd, torch.func.vmap, torch.vmap, torch.func.vjp do for you, so calling one of them fails a
check of its own.

Write the body of batch_jacobian below, then hand it in as batch_jacobian.py: your teacher checks it with the course's own checks,

    gradlab check batch_jacobian.py --course course.toml
"""

# gradlab-exercise: jacobian_graded.batch_jacobian
import torch
import torch.nn.functional as F


def batch_jacobian(f, X):
    """f maps a batch X of shape (B, n) to f(X) of shape (B, m), each sample on its own: row b of f(X)
    depends on row b of X alone. Return the B per-sample Jacobians,

    J[b, i, j] = ∂f(X)[b, i] / ∂X[b, j]          shape (B, m, n)

    with one backward pass per output i for the whole batch: m of them, not B·m. Because the samples are
    independent, the gradient of Σ_b f(X)[b, i] with respect to X holds, in its row b, row i of sample b's
    Jacobian. (tf.gradients(f(X)[:, i], X) computed exactly that: it sums over the outputs it is given.)

    Shapes: X (B, n) float64, arriving without requires_grad; f is a plain function of a (B, n) tensor. The
    check counts the backward passes that go through f's output (autograd.grad or .backward, each call one
    pass, whatever it is given): at most m. torch.autograd.functional.jacobian, torch.func.jacrev / jacfwd and
    vmap compute this for you: write it with torch.autograd.grad. The inputs: more samples than outputs, more
    outputs than samples, one sample, one output, a square m = n.
    """
    X = X.detach().requires_grad_(True)
    Y = f(X)
    B, m = Y.shape
    J = torch.zeros(B, m, X.shape[1], dtype=X.dtype)
    for b in range(B):
        for i in range(m):
            J[b, i] = torch.autograd.grad(Y[b, i], X, retain_graph=True)[0][b]
    return J
