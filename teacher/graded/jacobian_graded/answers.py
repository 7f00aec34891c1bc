"""The model answer to jacobian_graded.batch_jacobian: the suite checks it with gradlab check; the teacher hands it
out after the exam (it is in no student's gradlab)."""

import torch


def batch_jacobian(f, X):
    X = X.detach().requires_grad_(True)
    y = f(X)  # (B, m): row b from X[b] alone
    rows = [torch.autograd.grad(y[:, i].sum(), X, retain_graph=True)[0]  # row i of every sample's Jacobian
            for i in range(y.shape[1])]
    return torch.stack(rows, dim=1)  # (B, m, n)
