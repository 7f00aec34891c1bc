# gradlab-exercise: mnist.sgd_step
# corpus: wrong
# mistake: updates W and b in place (W -= lr*gW) although they are leaves that require grad: PyTorch refuses (RuntimeError).
# relation: crashes: 'a leaf Variable that requires grad is being used in an in-place operation'
import torch
import torch.nn.functional as F


def sgd_step(W, b, x, y, lr):
    z = x @ W + b
    cost = torch.mean(-torch.sum(y * F.log_softmax(z, dim=1), dim=1))
    gW, gb = torch.autograd.grad(cost, [W, b])
    W -= lr * gW
    b -= lr * gb
    return W, b
