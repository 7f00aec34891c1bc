# gradlab-exercise: mnist.softmax_grad
# corpus: wrong
# mistake: softmax written as exp(z)/Σexp(z) without subtracting the max: exp overflows for large logits and gives NaN.
# relation: equals expected for moderate logits; NaN when some logit exceeds ~88 (float32)
import torch
import torch.nn.functional as F


def softmax_grad(W, b, x, y):
    B = x.shape[0]
    e = torch.exp(x @ W + b)
    p = e / e.sum(dim=1, keepdim=True)
    gW = x.T @ (p - y) / B
    gb = (p - y).mean(dim=0)
    return gW, gb
