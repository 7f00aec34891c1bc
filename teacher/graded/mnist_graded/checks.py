"""The reference and the known mistakes of weighted_softmax_grad, on gradlab's side only (never in the sandbox).

The reference is autograd's gradient of the cost as TF-1 defines it (a forward, differentiated), computed in float64
and rounded to the inputs' precision: no hand-derived formula, so that it checks the derivation."""

import torch
import torch.nn.functional as F

from gradlab.kit.exercise import Cause, Checks, Mistake, Relation, Suspects

from .harness import HARNESSES


def cost(W, b, x, y, w):
    """Σ_i w_i · loss_i / N (N: the non-zero weights), 0 when N = 0: TF-1's SUM_BY_NONZERO_WEIGHTS."""
    losses = -(y * F.log_softmax(x @ W + b, dim=1)).sum(dim=1)
    present = (w != 0).sum()
    total = (w * losses).sum()
    return total / present if present > 0 else total * 0


def _autograd(W, b, x, y, w):
    W64 = W.detach().to(torch.float64, copy=True).requires_grad_(True)  # a copy: the case's own W stays as it is
    b64 = b.detach().to(torch.float64, copy=True).requires_grad_(True)
    gW, gb = torch.autograd.grad(cost(W64, b64, x.double(), y.double(), w.double()), [W64, b64])
    return gW.to(W.dtype), gb.to(b.dtype)


def _expected(case: dict) -> dict:
    gW, gb = _autograd(*(case[k] for k in ("W", "b", "x", "y", "w")))
    return {"gW": gW, "gb": gb}


def _scaled(W, b, x, y, w, by):
    d = w[:, None] * (torch.softmax(x @ W + b, dim=1) - y) / by
    return x.T @ d, d.sum(dim=0)


def _weights_squared(W, b, x, y, w):
    return _scaled(W, b, x, y, w * w, max(int((w != 0).sum()), 1))


def _by_batch(W, b, x, y, w):
    return _scaled(W, b, x, y, w, len(x))


def _by_weight_sum(W, b, x, y, w):
    return _scaled(W, b, x, y, w, w.sum())


def _unguarded(W, b, x, y, w):
    return _scaled(W, b, x, y, w, (w != 0).sum())  # 0/0 when every weight is 0


def _no_max_shift(W, b, x, y, w):
    e = torch.exp(x @ W + b)  # inf above z ≈ 88.7 in float32, and inf/inf = NaN
    d = w[:, None] * (e / e.sum(dim=1, keepdim=True) - y) / max(int((w != 0).sum()), 1)
    return x.T @ d, d.sum(dim=0)


def _weights_ignored(W, b, x, y, w):
    d = (torch.softmax(x @ W + b, dim=1) - y) / len(x)
    return x.T @ d, d.sum(dim=0)


def _weights_on_w_only(W, b, x, y, w):
    p = torch.softmax(x @ W + b, dim=1)
    n = max(int((w != 0).sum()), 1)
    return x.T @ (w[:, None] * (p - y)) / n, (p - y).sum(dim=0) / n


def _softmax_over_batch(W, b, x, y, w):
    d = w[:, None] * (torch.softmax(x @ W + b, dim=0) - y) / max(int((w != 0).sum()), 1)
    return x.T @ d, d.sum(dim=0)


CHECKS = {"weighted_softmax_grad": Checks(
    harness=HARNESSES["weighted_softmax_grad"], reference=_autograd, expected=_expected,
    mistakes=[
        Mistake(name="divided by B", fn=_by_batch,
                diagnosis="you divided by the batch size B: SUM_BY_NONZERO_WEIGHTS divides by N, the number of "
                          "samples whose weight is not 0 (a padded sample of weight 0 does not count). Right only "
                          "where no weight is 0"),
        Mistake(name="divided by Σw", fn=_by_weight_sum,
                diagnosis="you divided by the sum of the weights, TF-1's Reduction.MEAN: the default, "
                          "SUM_BY_NONZERO_WEIGHTS, divides Σ_i w_i · loss_i by the number of non-zero weights N"),
        Mistake(name="0/0", fn=_unguarded,
                diagnosis="right wherever some weight is not 0, but NaN when every weight is 0: N = 0 there, and "
                          "0/0 is NaN. TF-1 divides safely (_safe_div returns 0 when the denominator is 0): the "
                          "cost is 0 and so is its gradient; divide by max(N, 1)"),
        Mistake(name="weights ignored", fn=_weights_ignored,
                diagnosis="your gradient is mnist.softmax_grad's, the unweighted mean: each sample's term of "
                          "∂cost/∂z is multiplied by its weight, w_i (p_i − y_i) / N"),
        Mistake(name="∂b unweighted", fn=_weights_on_w_only,
                diagnosis="∂cost/∂W is right but ∂cost/∂b left the weights out: ∂cost/∂b = Σ_i w_i (p_i − y_i) / N, "
                          "the same weighted ∂cost/∂z summed over the batch"),
    ],
    names={"gW": "∂cost/∂W", "gb": "∂cost/∂b"},
    quantities=lambda case: [("B", len(case["x"]), "the batch size"),
                             ("N", int((case["w"] != 0).sum()), "the number of non-zero weights"),
                             ("K", 10, "K = 10 classes")],
    relations=[Relation(what="the gradient with the softmax taken over the batch (dim=0) instead of the 10 classes",
                        fn=_softmax_over_batch, hint="softmax normalises each row: torch.softmax(z, dim=1)"),
               Relation(what="the gradient with every weight squared (w_i² · loss_i)", fn=_weights_squared,
                        hint="each sample's loss is weighed by w_i once: ∂cost/∂z_i = w_i (p_i − y_i)/N")],
    hints={("*", "scale", "B"): "the cost is divided by N, the number of non-zero weights",
           ("*", "scale", "1/N"): "you divided by N twice",
           ("*", "nonfinite", "*"): Suspects(causes=(
               Cause(words="exp(z) overflows in float32 above z ≈ 88.7 (the softmax without its max shift)",
                     fix="subtract each row's max first, or use torch.softmax", fn=_no_max_shift),
               Cause(words="0/0 where every weight is 0", fix="divide by max(N, 1)", fn=_unguarded)))})}
