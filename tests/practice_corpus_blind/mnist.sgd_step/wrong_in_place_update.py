"""gradlab exercise mnist.sgd_step (level 1): one SGD step of softmax regression with torch.autograd.grad, then W
-= lr·g.

Write it yourself: this exercise is to write what torch.optim.Optimizer does for you, so calling it fails a
check of its own.

Write the body of sgd_step below, then check it:

    gradlab check sgd_step.py
"""

# gradlab-exercise: mnist.sgd_step
import torch
import torch.nn.functional as F


def sgd_step(W, b, x, y, lr):
    """One gradient-descent step of softmax regression, by hand.

    z = x W + b;  cost = mean_i(−Σ_k y_ik log softmax(z)_ik)   (the mean over the batch)
    gW, gb = ∂cost/∂W, ∂cost/∂b                              with torch.autograd.grad
    return W − lr·gW, b − lr·gb                               new tensors; W and b are not changed

    Shapes: W (784, 10), b (10,), x (B, 784), y (B, 10) one-hot, lr a float. W and b arrive with
    requires_grad=True. Checked on: a batch of 100, one sample, zero weights (the tutorial's start), lr = 0,
    large weights, logits in the hundreds (float32), and 20 steps of training from zero (float64). Take log
    softmax(z) with F.log_softmax (or F.cross_entropy): at logits in the hundreds the tutorial's
    log(softmax(z)) is log 0 = −inf, 0·(−inf) is NaN, and so is its gradient. TF-1: grad_W, grad_b =
    tf.gradients(xs=[W, b], ys=cost); W.assign(W - lr * grad_W).
    """
    z = x @ W + b
    cost = -(y * F.log_softmax(z, dim=1)).sum(dim=1).mean()
    gW, gb = torch.autograd.grad(cost, [W, b])
    with torch.no_grad():
        W -= lr * gW
        b -= lr * gb
    return W, b
