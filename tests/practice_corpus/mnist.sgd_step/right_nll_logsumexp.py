# gradlab-exercise: mnist.sgd_step
# corpus: right
# mistake: none: writes log-softmax as z − logsumexp(z) and picks the true class with gather.
# relation: equals expected (up to float rounding)
import torch
import torch.nn.functional as F


def sgd_step(W, b, x, y, lr):
    z = x @ W + b
    logp = z - torch.logsumexp(z, dim=1, keepdim=True)
    nll = -logp.gather(1, y.argmax(1, keepdim=True)).squeeze(1)
    gW, gb = torch.autograd.grad(nll.mean(), [W, b])
    new_W = W.detach().clone().sub_(lr * gW)
    new_b = b.detach().clone().sub_(lr * gb)
    return new_W, new_b
