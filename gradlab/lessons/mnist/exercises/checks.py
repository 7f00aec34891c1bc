"""The exercises of `gradlab mnist`, on gradlab's side: each one's reference answer, its known mistakes (a realistic
wrong implementation and what to tell its author) and what the diagnosis measures (the words for each output, the
quantities a scale may equal, the relations a wrong output may have). Never imported beside a submission."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from gradlab.kit.exercise import Checks, Mistake, Relation, autograd_outputs
from gradlab.kit.training import cross_entropy
from gradlab.lessons.mnist.exercises.harness import HARNESSES

CLASSES = ("K", 10, "K = 10 classes")

# ------------------------------------------------------------------------------------------------------ sgd_step

def _sgd_reference(W, b, x, y, lr):
    """torch.optim.SGD's step from the same weights: the gradient of the same cost by autograd, then SGD's own line
    (torch/optim/sgd.py, _single_tensor_sgd: `param.add_(grad, alpha=-lr)`), so the two agree to the bit (tested)."""
    W, b = W.detach().clone().requires_grad_(True), b.detach().clone().requires_grad_(True)
    gW, gb = torch.autograd.grad(cross_entropy(x @ W + b, y), [W, b])
    return W.detach().add(gW, alpha=-lr), b.detach().add(gb, alpha=-lr)


def _sgd_uphill(W, b, x, y, lr):
    gW, gb = torch.autograd.grad(cross_entropy(x @ W + b, y), [W, b])
    return (W + lr * gW).detach(), (b + lr * gb).detach()


def _sgd_summed(W, b, x, y, lr):
    gW, gb = torch.autograd.grad(-(y * F.log_softmax(x @ W + b, dim=1)).sum(), [W, b])
    return (W - lr * gW).detach(), (b - lr * gb).detach()


def _sgd_b_forgotten(W, b, x, y, lr):
    gW, _ = torch.autograd.grad(cross_entropy(x @ W + b, y), [W, b])
    return (W - lr * gW).detach(), b.detach().clone()


def _sgd_softmax_twice(W, b, x, y, lr):
    gW, gb = torch.autograd.grad(F.cross_entropy(torch.softmax(x @ W + b, dim=1), y.argmax(dim=1)), [W, b])
    return (W - lr * gW).detach(), (b - lr * gb).detach()


def _sgd_batch_axis(W, b, x, y, lr):
    gW, gb = torch.autograd.grad(-(y * F.log_softmax(x @ W + b, dim=0)).sum(dim=1).mean(), [W, b])
    return (W - lr * gW).detach(), (b - lr * gb).detach()


def _sgd_quantities(case: dict) -> list:
    n = len(case["x"]) if "x" in case else case["xs"].shape[1]
    return [("B", n, "the batch size"), ("lr", case["lr"], "the learning rate"), CLASSES]


SGD = Checks(
    harness=HARNESSES["sgd_step"], reference=_sgd_reference,
    mistakes=[
        Mistake(name="uphill", fn=_sgd_uphill,
                diagnosis="your step goes uphill: the cost rises. Gradient descent moves against the gradient: "
                          "W − lr·g, not W + lr·g"),
        Mistake(name="summed cost", fn=_sgd_summed,
                diagnosis="your step is B times too large: the cost is the mean over the batch (.mean() of the "
                          "per-sample costs), not their sum"),
        Mistake(name="b forgotten", fn=_sgd_b_forgotten,
                diagnosis="b did not move: take its gradient too and return b − lr·∂cost/∂b"),
        Mistake(name="softmax twice", fn=_sgd_softmax_twice,
                diagnosis="you applied softmax before F.cross_entropy, which applies log_softmax itself: the cost is "
                          "then the cross-entropy of softmax(softmax(z)), whose gradient is far smaller. Give "
                          "F.cross_entropy the logits z = x W + b"),
    ],
    names={"W": "W", "b": "b"},
    base=lambda case: {"W": case["W"], "b": case["b"]},
    quantities=_sgd_quantities,
    relations=[Relation(what="the step of a cost whose log_softmax runs over the batch (dim=0) instead of the 10 "
                             "classes (dim=1)", fn=_sgd_batch_axis,
                        hint="normalise over the classes: F.log_softmax(z, dim=1)")],
    hints={("*", "scale", "1/K"): "the cost averages over the 10 classes too (torch.mean(−y · log p) takes the "
                                  "mean of all B × 10 entries): sum over the classes, then take the mean over the "
                                  "batch",
           ("*", "scale", "lr"): "lr is applied twice: once inside the cost (or the gradient) and once in the step",
           ("*", "scale", "B"): "the cost is the mean over the batch, not the sum",
           ("*", "scale", "1/B"): "the mean over the batch is taken twice",
           ("*", "nonfinite", "*"): "NaN or inf where the logits are large: exp(z) overflows in float32 above z ≈ "
                                    "88.7, and log(softmax(z)) is log 0 = −inf once a probability underflows to 0 "
                                    "(0 · −inf = NaN): use F.log_softmax or F.cross_entropy, which subtract each "
                                    "row's max first"},
    errors=[("a leaf Variable that requires grad is being used in an in-place operation",
             "W -= lr * gW changes W in place, and W is a leaf that requires grad: autograd forbids it. Return new "
             "tensors, W - lr * gW and b - lr * gb; the exercise says W and b are not changed (an update under "
             "torch.no_grad() would run, but it changes the caller's W)")])


# -------------------------------------------------------------------------------------------------- softmax_grad

def _grad_reference(W, b, x, y):
    """The formulas, as a student writes them (no autograd): checked against autograd like a student's answer."""
    d = (torch.softmax(x @ W + b, dim=1) - y) / len(x)  # ∂cost/∂z = (p − y)/B
    return x.T @ d, d.sum(dim=0)


def _grad_expected(case: dict) -> dict:
    """autograd's gradient of the same cost: the lesson's claim is that the hand-derived one equals it."""
    W, b = case["W"].clone().requires_grad_(True), case["b"].clone().requires_grad_(True)
    gW, gb = torch.autograd.grad(cross_entropy(case["x"] @ W + b, case["y"]), [W, b])
    return {"gW": gW, "gb": gb}


def _grad_no_b(W, b, x, y):
    d = torch.softmax(x @ W + b, dim=1) - y  # p − y, not divided by B: ∂W = xᵀd is B× too large, ∂b = mean d is right
    return x.T @ d, d.mean(dim=0)


def _grad_uphill(W, b, x, y):
    d = (y - torch.softmax(x @ W + b, dim=1)) / len(x)
    return x.T @ d, d.sum(dim=0)


def _grad_b_summed(W, b, x, y):
    d = torch.softmax(x @ W + b, dim=1) - y
    return x.T @ d / len(x), d.sum(dim=0)


def _grad_batch_axis(W, b, x, y):
    d = (torch.softmax(x @ W + b, dim=0) - y) / len(x)
    return x.T @ d, d.sum(dim=0)


def _grad_rows_sum_to_one(cases: list[dict], outs: list[dict], refs: list[dict]) -> str | None:
    """Softmax's probabilities sum to 1 over the classes, so ∂cost/∂b = mean(p − y) sums to 0 over them: measured."""
    for case, o in zip(cases, outs, strict=True):
        total = float(o["gb"].double().sum())
        if o["gb"].shape == (10,) and abs(total) > 1e-4 * max(1.0, float(o["gb"].abs().sum())):
            return (f"your ∂cost/∂b does not sum to 0 over the 10 classes (it sums to {total:.4g} on "
                    f"'{case['label']}'): the probabilities you used do not sum to 1 over the classes. softmax(z) "
                    "normalises each row over the classes (dim=1)")
    return None


GRAD = Checks(
    harness=HARNESSES["softmax_grad"], reference=_grad_reference, expected=_grad_expected,
    mistakes=[
        Mistake(name="∂W's /B forgotten", fn=_grad_no_b,
                diagnosis="∂cost/∂W is B times too large (your ∂cost/∂b, a mean over the batch, is right): xᵀ(p − y) "
                          "sums over the B samples and the cost is their mean, so ∂cost/∂W = xᵀ(p − y)/B"),
        Mistake(name="sign", fn=_grad_uphill,
                diagnosis="your gradient has the wrong sign: ∂cost/∂z = p − y (the prediction minus the label), not "
                          "y − p"),
        Mistake(name="∂b summed", fn=_grad_b_summed,
                diagnosis="∂cost/∂W is right but ∂cost/∂b is B times too large: it is the mean of (p − y) over the "
                          "batch, not its sum"),
    ],
    names={"gW": "∂cost/∂W", "gb": "∂cost/∂b"},
    quantities=lambda case: [("B", len(case["x"]), "the batch size"), CLASSES],
    relations=[Relation(what="the gradient with the softmax taken over the batch (dim=0) instead of the 10 classes",
                        fn=_grad_batch_axis, hint="softmax normalises each row: torch.softmax(z, dim=1)")],
    hints={("*", "scale", "1/B"): "you divided by B twice: (p − y)/B is already the mean's gradient",
           ("*", "scale", "B"): "the cost is a mean over the batch: divide the sum over the samples by B",
           ("*", "transpose", "*"): "∂cost/∂W = xᵀ(p − y)/B has W's shape (784, 10)",
           ("*", "nonfinite", "*"): "NaN where the logits are large: exp(z) overflows to inf in float32 above z ≈ "
                                    "88.7, and inf/inf = NaN. Subtract each row's max before exp (softmax(z) = "
                                    "softmax(z − max z)), or use torch.softmax, which does"},
    experiments=[_grad_rows_sum_to_one])


# ---------------------------------------------------------------------------------------------------- LogSoftmax

class _StableLogSoftmax(torch.autograd.Function):
    """log_softmax(z) = z − logsumexp(z) along the last dimension; its backward is dy − softmax(z) · Σ_j dy_j."""

    @staticmethod
    def forward(ctx, z):
        out = z - torch.logsumexp(z, dim=-1, keepdim=True)
        ctx.save_for_backward(z)
        return out

    @staticmethod
    def backward(ctx, dy):
        z, = ctx.saved_tensors
        return dy - torch.softmax(z, dim=-1) * dy.sum(dim=-1, keepdim=True)  # differentiable in z: gradgrad right


def _lsm_expected(case: dict) -> dict:
    """The library's way: autograd through F.log_softmax, twice (the lesson's claim is that yours equals it)."""
    return autograd_outputs(lambda z: F.log_softmax(z, dim=-1), [case["z"]], case["dy"], [case["v"]])


class _NaiveLogSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        e = torch.exp(z)
        return torch.log(e / e.sum(dim=-1, keepdim=True))

    @staticmethod
    def backward(ctx, dy):
        z, = ctx.saved_tensors
        return dy - torch.softmax(z, dim=-1) * dy.sum(dim=-1, keepdim=True)


class _DyOnlyLogSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z - torch.logsumexp(z, dim=-1, keepdim=True)

    @staticmethod
    def backward(ctx, dy):
        z, = ctx.saved_tensors
        return dy - torch.softmax(z, dim=-1)  # the Σ_j dy_j left out: right only when the dy of a row sums to 1


class _SavedSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        out = z - torch.logsumexp(z, dim=-1, keepdim=True)
        ctx.save_for_backward(torch.softmax(z, dim=-1))  # a constant to autograd: the second derivative is lost
        return out

    @staticmethod
    def backward(ctx, dy):
        p, = ctx.saved_tensors
        return dy - p * dy.sum(dim=-1, keepdim=True)


class _WholeTensorLogSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z - torch.logsumexp(z.reshape(-1), dim=0)

    @staticmethod
    def backward(ctx, dy):
        z, = ctx.saved_tensors
        p = torch.softmax(z.reshape(-1), dim=0).reshape(z.shape)
        return dy - p * dy.sum()


class _LogOfSoftmax(_StableLogSoftmax):
    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return torch.log(torch.softmax(z, dim=-1))  # the tutorial's: log 0 = −inf once a probability underflows


class _SumOverBatch(_StableLogSoftmax):
    @staticmethod
    def backward(ctx, dy):
        z, = ctx.saved_tensors
        return dy - torch.softmax(z, dim=-1) * dy.sum(dim=0, keepdim=True)  # Σ over the rows, not the row


class _DiagonalOnly(_StableLogSoftmax):
    @staticmethod
    def backward(ctx, dy):
        z, = ctx.saved_tensors
        return dy * (1 - torch.softmax(z, dim=-1))  # the Jacobian's diagonal alone


LOG_SOFTMAX = Checks(
    harness=HARNESSES["LogSoftmax"], reference=_StableLogSoftmax, expected=_lsm_expected,
    mistakes=[
        Mistake(name="naive", fn=_NaiveLogSoftmax,
                diagnosis="log(exp(z) / Σ exp(z)) as written: exp(z) is inf in float32 above z ≈ 88.7 (inf/inf = NaN) "
                          "and 0 below z ≈ −104 (log 0 = −inf). Subtract the row's max first, or use "
                          "z − torch.logsumexp(z, dim=-1, keepdim=True)"),
        Mistake(name="log of softmax", fn=_LogOfSoftmax,
                diagnosis="your backward is right, but the forward takes log(softmax(z)): at logits near −1000 in "
                          "float32 a probability underflows to 0 and its log is −inf. Compute z − logsumexp(z) "
                          "(z − m − log Σ exp(z − m)), which never takes the log of a rounded 0"),
        Mistake(name="Σdy left out", fn=_DyOnlyLogSoftmax,
                diagnosis="your backward returns dy − softmax(z): the Jacobian of log_softmax is I − 1·softmax(z)ᵀ, so "
                          "the vector-Jacobian product is dy − softmax(z)·Σ_j dy_j (sum dy over the row, "
                          "keepdim=True); yours is right only when each row of dy sums to 1"),
        Mistake(name="softmax saved in forward", fn=_SavedSoftmax,
                diagnosis="the value and the gradient are right, but softmax(z) was saved in forward: autograd sees it "
                          "as a constant, so the second derivative loses the softmax's own derivative. Save z and "
                          "compute torch.softmax(z, dim=-1) in backward"),
        Mistake(name="whole tensor", fn=_WholeTensorLogSoftmax,
                diagnosis="you normalised over the whole tensor: log_softmax runs along the last dimension, one row of "
                          "logits at a time (dim=-1, keepdim=True)"),
    ],
    names={"value": "the value", "gradient": "the gradient", "second": "the second derivative"},
    relations=[Relation(what="the backward dy − softmax(z)·Σdy with Σdy taken over the batch (dim=0), not the row",
                        fn=_SumOverBatch, hint="sum dy over each row: dy.sum(dim=-1, keepdim=True)"),
               Relation(what="the backward dy·(1 − softmax(z)): the Jacobian's diagonal alone", fn=_DiagonalOnly,
                        hint="the Jacobian I − 1·softmax(z)ᵀ has off-diagonal entries too: the vector-Jacobian "
                        "product is dy − softmax(z)·Σ_j dy_j")],
    hints={("second", "zero", "*"): "your backward is a constant to autograd: compute it from the saved z with "
                                    "torch operations (no .detach(), no value saved in forward)",
           ("*", "nonfinite", "*"): "NaN or inf at large logits: exp(z) overflows or underflows in float32; use "
                                    "torch.logsumexp, or subtract the row's max before exp"})


CHECKS: dict[str, Checks] = {
    "sgd_step": SGD,
    "softmax_grad": GRAD,
    "LogSoftmax": LOG_SOFTMAX,
}
