"""gradlab exercise mnist.softmax_grad (level 2): the gradient of softmax regression derived by hand, xᵀ(p − y)/B:
no autograd at all.

Write the body of softmax_grad below, then check it:

    gradlab check softmax_grad.py

(The README's second worked wrong answer, a mistake no list names: `gradlab check examples/practice/softmax_grad.py`.)
"""

# gradlab-exercise: mnist.softmax_grad
import torch


def softmax_grad(W, b, x, y):
    """∂cost/∂W and ∂cost/∂b of softmax regression, from the formulas, without autograd."""
    B = x.shape[0]
    z = x @ W + b
    p = torch.softmax(z, dim=1)
    dz = (p - y) / B  # a student's answer: ∂cost/∂z, the mean's gradient ...
    print("batch of", B, "dz", tuple(dz.shape))
    return x.T @ dz / B, dz.sum(dim=0) / B  # ... and then divided by B once more
