# gradlab-exercise: mnist.softmax_grad
# corpus: wrong
# mistake: breaks the rule of the exercise: it calls torch.autograd.grad instead of using the formula (the numbers are right).
# relation: values = expected; violates 'no autograd at all'
import torch
import torch.nn.functional as F


def softmax_grad(W, b, x, y):
    W = W.detach().requires_grad_()
    b = b.detach().requires_grad_()
    cost = -(y * F.log_softmax(x @ W + b, dim=1)).sum(1).mean()
    gW, gb = torch.autograd.grad(cost, [W, b])
    return gW, gb
