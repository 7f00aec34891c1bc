"""gradlab exercise mnist.softmax_grad (level 2): the gradient of softmax regression derived by hand, xᵀ(p −
y)/B: no autograd at all.

Write the body of softmax_grad below, then check it:

    gradlab check softmax_grad.py
"""

# gradlab-exercise: mnist.softmax_grad
import torch
import torch.nn.functional as F


def softmax_grad(W, b, x, y):
    """∂cost/∂W and ∂cost/∂b of softmax regression, from the formulas, without autograd.

    p = softmax(x W + b);  cost = mean_i(−Σ_k y_ik log p_ik)
    ∂cost/∂z = (p − y)/B,  ∂cost/∂W = xᵀ (p − y)/B,  ∂cost/∂b = mean_i (p − y)

    Shapes: W (784, 10), b (10,), x (B, 784), y (B, 10) one-hot; W, b, x and y are not changed. Return (gW, gb)
    of shapes (784, 10), (10,). The inputs include logits far above 88, where exp overflows in float32.
    TF-1: what tf.gradients(xs=[W, b], ys=cost) computes for you.
    """
    z = x @ W + b
    z = z - z.max(dim=1, keepdim=True).values
    e = torch.exp(z)
    p = e / e.sum(dim=1, keepdim=True)
    B = x.shape[0]
    dz = (p - y) / B
    return x.t() @ dz, dz.sum(dim=0)
