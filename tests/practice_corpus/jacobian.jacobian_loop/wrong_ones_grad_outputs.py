# gradlab-exercise: jacobian.jacobian_loop
# corpus: wrong
# mistake: passes grad_outputs = ones for every row instead of the unit vector e_i, so each row is the sum of all rows (what tf.gradients gives).
# relation: every row = column sums of the expected J (Σ_i J[i, :]); right only when m = 1
import torch
import torch.nn.functional as F


def jacobian_loop(f, x):
    x = x.detach().requires_grad_(True)
    y = f(x)
    rows = []
    for i in range(y.shape[0]):
        (g,) = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y), retain_graph=True)
        rows.append(g)
    return torch.stack(rows)
