# gradlab-exercise: mnist.sgd_step
# corpus: wrong
# mistake: updates W and b in place under no_grad and returns them: the values are right but the caller's W and b are changed, which the task forbids.
# relation: returned values = expected; inputs W, b mutated (returned tensors alias the inputs)
import torch
import torch.nn.functional as F


def sgd_step(W, b, x, y, lr):
    z = x @ W + b
    cost = torch.mean(-torch.sum(y * F.log_softmax(z, dim=1), dim=1))
    gW, gb = torch.autograd.grad(cost, [W, b])
    with torch.no_grad():
        W -= lr * gW
        b -= lr * gb
    return W, b
