# gradlab-exercise: jacobian.jacobian_loop
# corpus: wrong
# mistake: uses y[i].backward() and reads x.grad without zeroing it between rows, so the gradients accumulate.
# relation: row i = Σ_{k ≤ i} expected row k (cumulative sum down the rows); first row right
import torch
import torch.nn.functional as F


def jacobian_loop(f, x):
    x = x.clone().detach().requires_grad_(True)
    y = f(x)
    rows = []
    for i in range(y.shape[0]):
        y[i].backward(retain_graph=True)
        rows.append(x.grad.clone())
    return torch.stack(rows)
