"""gradlab exercise ddp.accumulated_grad (level 2): the gradient of one batch accumulated over micro-batches of
any sizes, ≡ the whole batch's.

Write the body of accumulated_grad below, then check it:

    gradlab check accumulated_grad.py
"""

# gradlab-exercise: ddp.accumulated_grad
import torch
import torch.nn.functional as F


def accumulated_grad(model, x, y, sizes):
    """The gradient of the mean cross-entropy over the whole batch, computed micro-batch by micro-batch.

    g = (1/B) Σ_i ∇ℓ_i = Σ_k (n_k/B) · ḡ_k             for micro-batches of n_1 … n_K samples
    for each part k: loss_k = Σ_{i in k} ℓ_i / B; loss_k.backward()   (.backward() adds into .grad)

    Shapes: model a torch.nn.Module (its .grad may hold anything on entry), x (B, 784), y (B,) class numbers,
    sizes a list of K part sizes that add up to B (they may differ: 64, 32, 4). Use F.cross_entropy. Return
    [p.grad for p in model.parameters()] after the last part. TF-1 had no .grad that adds up: tf.gradients
    returns new tensors at every call, so accumulating them took variables of your own (assign_add) or
    tf.ConditionalAccumulator ("for aggregating gradients").
    """
    B = x.shape[0]
    for xk, yk in zip(x.split(sizes), y.split(sizes)):
        loss_k = F.cross_entropy(model(xk), yk, reduction='sum') / B
        loss_k.backward()
    return [p.grad for p in model.parameters()]
