"""Jacobians and Hessians: why the gradient of a non-scalar output is a sum, and how to get the full matrix.

The tutorial's question: a policy matrix X (2×4), a state y (4), and

    z = X y            (2 numbers)
    W = log softmax(z) (2 numbers: log-probabilities of two actions)

The asker wanted dW₁/dX, but `tf.gradients(W, X)` returned a single 2×4 matrix. Gradients of a non-scalar output
are vector-Jacobian products: autograd computes vᵀJ for a vector v of your choice, and TF-1 used v = ones when
none was given (tf.gradients' grad_ys=None, gradients_impl.py), so the answer was Σ_i ∂W_i/∂X. PyTorch refuses
to guess: `W.backward()` on a non-scalar raises, and `torch.autograd.grad(W, X, grad_outputs=v)` asks for v.

Closed form. With p = softmax(z):  ∂ log p_i/∂z_k = δ_ik − p_k,  and  ∂z_k/∂X_kj = y_j,  so

    ∂W_i/∂X = (e_i − p) yᵀ         (a 2×4 matrix for each output i)
    Σ_i ∂W_i/∂X = (1 − 2p) yᵀ      (what tf.gradients(W, X) returned, here with 2 outputs)

The full Jacobian (2×2×4) needs one backward pass per output, v = e_i for each i (the tutorial's answer: a loop of
`tf.gradients`), or one batched pass: `vmap` over the basis vectors e_i of a vector-Jacobian product
(`torch.func.jacrev`), or forward mode, one JVP per input, batched by vmap into one pass (`torch.func.jacfwd`).

---

In the code: policy is W; METHODS holds the five ways to the Jacobian (the loop over outputs,
`torch.autograd.functional.jacobian`, `torch.func.jacrev`, `torch.func.jacfwd`, and vmap of a vector-Jacobian
product), checked against each other and the closed form. The loop, and vmap of a vector-Jacobian product, each
answer the exercise jacobian.jacobian_loop, so their code is not shown here.

The Hessian of W_i is the Jacobian of its gradient. HESSIANS holds four ways: `jacfwd(jacrev(f))`,
`torch.func.hessian`, `torch.autograd.functional.hessian`, and tf.hessians' own way (the gradient with
create_graph=True, then one more backward pass per entry of it: a Hessian-vector product away from the exercise
jacobian.hvp, so its code is not shown here). The four are two algorithms, each written twice:
`torch.func.hessian` is `jacfwd(jacrev(func, argnums), argnums)` (forward-over-reverse; torch's source,
torch/_functorch/eager_transforms.py), and `torch.autograd.functional.hessian` with its defaults (vectorize=False,
outer_jacobian_strategy="reverse-mode") takes the Jacobian of a create_graph=True Jacobian with one backward pass
per entry of the gradient (torch/autograd/functional.py: `hessian` calls `jacobian`, which loops
`for j in range(out.nelement())`), which is the loop (reverse-over-reverse). A claim measures that each pair is
bitwise equal; the other claims that the two algorithms and central finite differences (hessian_fd) agree. W and
its derivatives are computed in float64 (the `--scaling` timings in float32).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.func import hessian, jacfwd, jacrev, vjp, vmap

from gradlab.kit import autograd_graph
from gradlab.kit.result import Claim, Column, Curve, Result, Table
from gradlab.lessons.jacobian.settings import (  # the settings, declared once (no torch: --help reads them)
    Config,
    parse_matrix,
    parse_vector,
)

DEFAULT_MATRIX = "0.2,0.5,-0.3,0.1;0.4,-0.2,0.6,-0.5"
DEFAULT_STATE = "1.0,0.5,-1.0,2.0"


# The code `--explain` shows beside the math, read from this file at run time.
EXPLAIN = ("policy", "hessian_fd")


def policy(X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """W = log softmax(X y): the tutorial's log-probabilities."""
    return torch.log_softmax(X @ y, dim=0)


# ---------------------------------------------------------------------------------------------------------------
# Five ways to the full Jacobian J[i] = ∂W_i/∂X.
# ---------------------------------------------------------------------------------------------------------------

def graphs(config: Config) -> list[autograd_graph.Graph]:
    """Three backward passes: from W = log softmax(X y) seeded with ones, as TF's tf.gradients is (what arrives at
    X is Σ_i ∂W_i/∂X, a row-sum of the Jacobian, not the Jacobian); from W_0 alone (one row of it: the loop over
    outputs runs one such pass per row); and from one entry of the gradient recorded with create_graph=True (a row
    of the Hessian: a grad of a grad, its nodes the backward's own)."""
    X = torch.tensor(parse_matrix(config.matrix), dtype=torch.float64, requires_grad=True)
    y = torch.tensor(parse_vector(config.state, "state"), dtype=torch.float64)
    with autograd_graph.record():
        W = policy(X, y)
        (g,) = torch.autograd.grad(W[config.output], X, create_graph=True)  # tf.hessians: the gradient, recorded
    shape = f"X {X.shape[0]}×{X.shape[1]}"
    return [autograd_graph.trace(W, title=f"jacobian: W = log softmax(X y), {shape}, seeded with ones", names={"X": X},
                                 note="look at: X receives one matrix, Σ_i ∂W_i/∂X: the Jacobian's rows summed"),
            autograd_graph.trace(W[0], title=f"jacobian: row 0, W_0 alone ({len(W)} rows: one backward each)",
                                 names={"X": X}, note="look at: SelectBackward0 sends the gradient into W_0 only: "
                                                      "what reaches X is the Jacobian's row 0"),
            autograd_graph.trace(g.reshape(-1)[0], title=f"jacobian: the Hessian of W_{config.output}, row 0: the "
                                                         "gradient's entry 0 differentiated again", names={"X": X},
                                 note="look at: LogSoftmaxBackwardDataBackward0, the first backward's own op "
                                      "differentiated: a grad of a grad")]


def jacobian_loop(f: Callable, x: torch.Tensor) -> torch.Tensor:
    """One backward pass per output: the tutorial's tf.while_loop over outputs."""
    x = x.detach().requires_grad_(True)
    out = f(x)
    rows = [torch.autograd.grad(out[i], x, retain_graph=True)[0] for i in range(len(out))]
    return torch.stack(rows)


def jacobian_vmap_vjp(f: Callable, x: torch.Tensor) -> torch.Tensor:
    """vᵀJ for every basis vector v = e_i at once: vmap over the rows of the identity."""
    out, pullback = vjp(f, x)
    (rows,) = vmap(pullback)(torch.eye(len(out), dtype=out.dtype, device=out.device))
    return rows


METHODS: dict[str, Callable] = {
    "loop over outputs": jacobian_loop,
    "autograd.functional.jacobian": lambda f, x: torch.autograd.functional.jacobian(f, x),
    "torch.func.jacrev": lambda f, x: jacrev(f)(x),
    "torch.func.jacfwd": lambda f, x: jacfwd(f)(x),
    "vmap of vjp": jacobian_vmap_vjp,
}


# ---------------------------------------------------------------------------------------------------------------
# Four ways to the Hessian of a scalar f.
# ---------------------------------------------------------------------------------------------------------------

def hessian_loop(f: Callable, x: torch.Tensor) -> torch.Tensor:
    """tf.hessians' way (TF 1.3-1.15): the gradient once, recorded (create_graph), then one backward pass per entry
    of it: H[j] = ∂(∂f/∂x_j)/∂x."""
    x = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)  # _gradients = gradients(ys, xs)
    g = g.reshape(-1)
    rows = [torch.autograd.grad(g[j], x, retain_graph=True)[0].reshape(-1)  # gradients(gradient[j], x)
            for j in range(g.numel())]
    return torch.stack(rows).reshape(*x.shape, *x.shape)


HESSIANS: dict[str, Callable] = {
    "jacfwd(jacrev(f))": lambda f, x: jacfwd(jacrev(f))(x),
    "torch.func.hessian": lambda f, x: hessian(f)(x),
    "autograd.functional.hessian": lambda f, x: torch.autograd.functional.hessian(f, x),
    "tf.hessians' way: a loop over the gradient": hessian_loop,
}


# The pairs that are one algorithm: forward-over-reverse twice, reverse-over-reverse twice.
SAME_ALGORITHM = (("torch.func.hessian", "jacfwd(jacrev(f))"),
                  ("autograd.functional.hessian", "tf.hessians' way: a loop over the gradient"))


def hessian_fd(f: Callable, x: torch.Tensor, h: float = 1e-4) -> torch.Tensor:
    """Central second differences: (f(x+hei+hej) − f(x+hei−hej) − f(x−hei+hej) + f(x−hei−hej)) / 4h²."""
    n = x.numel()
    flat = x.reshape(-1)
    H = torch.empty(n, n, dtype=x.dtype, device=x.device)
    basis = torch.eye(n, dtype=x.dtype, device=x.device) * h
    for i in range(n):
        for j in range(n):
            def g(d):
                return f((flat + d).reshape(x.shape))
            H[i, j] = (g(basis[i] + basis[j]) - g(basis[i] - basis[j]) - g(-basis[i] + basis[j])
                       + g(-basis[i] - basis[j])) / (4 * h * h)
    return H.reshape(*x.shape, *x.shape)


def run(config: Config, device: torch.device | None = None,
        progress: Callable[[str, int, int], None] = lambda *a: None) -> Result:
    """Reproduce the question, compute the Jacobian five ways and the Hessian four ways (and by finite
    differences). Pure: no printing."""
    device = device or torch.device("cpu")
    X = torch.tensor(parse_matrix(config.matrix), dtype=torch.float64, device=device)
    y = torch.tensor(parse_vector(config.state, "state"), dtype=torch.float64, device=device)
    d = derivatives(X, y, config.output, progress)
    k, m = X.shape
    H = d.hessians["jacfwd(jacrev(f))"]
    metrics = {"W": d.W.tolist(), "summed_gradient": d.summed.tolist(), "jacobian": d.jacobian.tolist(),
               "hessian": H.reshape(k * m, k * m).tolist(), "method_ms": {n: 1000 * t for n, t in d.timings.items()}}
    tables, curves = tables_of(config, d), {}
    if config.scaling:
        rows, metrics["scaling"] = scaling(config, device, progress)
        tables.append(Table(f"--scaling: Jacobian of f(x) = tanh(A x), A n×n, median of {config.repeats} "
                            f"(ms, {torch.get_num_threads()} threads)",
                            [Column(header="n"), *(Column(header=m, format=".3f") for m in METHODS),
                             Column(header="loop / vmap of vjp", format=".1f")], rows,
                            note="cost model: the loop makes n backward passes; jacrev / vmap of vjp one batched "
                                 "backward pass; jacfwd one batched forward pass over n tangents. Timings are "
                                 "not claims: they depend on the machine."))
        ns = list(metrics["scaling"])
        curves["Jacobian of tanh(Ax): time per method"] = Curve(
            "n", "ms (median)", ns, {name: [metrics["scaling"][n][name] for n in ns] for name in METHODS}, logy=True)
    return Result(lesson="jacobian",
                  title="why gradients of non-scalar outputs sum, full Jacobians, and Hessians by nesting",
                  seed=config.seed, metrics=metrics, claims=claims(config, d), tables=tables, curves=curves)


@dataclass
class Derivatives:
    """What run() measures of W = log softmax(X y), for its claims and tables."""

    W: torch.Tensor  # the policy's output, k log-probabilities
    p: torch.Tensor  # softmax(X y)
    summed: torch.Tensor  # autograd.grad(W, X, grad_outputs=ones) = Σ_i ∂W_i/∂X: what TF-1's tf.gradients returned
    error: str  # what autograd.grad(W, X) says without grad_outputs
    closed: torch.Tensor  # the Jacobian in closed form: ∂W_i/∂X = (e_i − p) yᵀ
    jacobians: dict[str, torch.Tensor]  # METHODS' name -> the full Jacobian
    timings: dict[str, float]  # METHODS' name -> seconds of its second call
    hessians: dict[str, torch.Tensor]  # HESSIANS' name -> the Hessian of W_output
    fd: torch.Tensor  # the same Hessian by central finite differences

    @property
    def jacobian(self) -> torch.Tensor:
        return self.jacobians["loop over outputs"]  # the reference the others are compared with


def derivatives(X: torch.Tensor, y: torch.Tensor, output: int, progress: Callable) -> Derivatives:
    """W's summed gradient (and PyTorch's error without grad_outputs), its Jacobian every way, and the Hessian of
    W_OUTPUT every way."""
    k = X.shape[0]

    def f(X_):
        return policy(X_, y)

    Xg = X.clone().requires_grad_(True)
    W = f(Xg)
    # What TF returned: the gradient with grad_outputs = ones, i.e. Σ_i ∂W_i/∂X.
    (summed,) = torch.autograd.grad(W, Xg, grad_outputs=torch.ones_like(W), retain_graph=True)
    try:  # what PyTorch says without grad_outputs
        torch.autograd.grad(W, Xg, retain_graph=True)
        error = "(no error)"
    except RuntimeError as e:
        error = str(e)

    p = torch.softmax(X @ y, dim=0)
    closed = torch.stack([torch.outer(torch.eye(k, dtype=X.dtype, device=X.device)[i] - p, y) for i in range(k)])
    jacobians, timings = {}, {}
    for i, (name, method) in enumerate(METHODS.items()):
        method(f, X)  # warm-up: time a second call, not the first (one-time setup)
        start = time.perf_counter()
        jacobians[name] = method(f, X).detach()
        timings[name] = time.perf_counter() - start
        progress(f"Jacobian: {name}", i + 1, len(METHODS))

    def fi(X_):
        return f(X_)[output]

    return Derivatives(W=W.detach(), p=p, summed=summed, error=error, closed=closed, jacobians=jacobians,
                       timings=timings, hessians={name: method(fi, X).detach() for name, method in HESSIANS.items()},
                       fd=hessian_fd(fi, X))


def _diff(a, b) -> float:
    return float((a - b).abs().max())


def claims(config: Config, d: Derivatives) -> list[Claim]:
    ref, H = d.jacobian, d.hessians["jacfwd(jacrev(f))"]
    n = H.shape[0] * H.shape[1]
    return [
        Claim.yes_no("non-scalar-needs-grad-outputs", "autograd.grad of a non-scalar W without grad_outputs raises",
                     "scalar outputs" in d.error),
        Claim("methods-agree", "all five Jacobian methods agree (max |Δ| from the loop)",
              max(_diff(J, ref) for J in d.jacobians.values()), 1e-6),
        Claim("summed-is-jacobian-sum", "the summed gradient (grad_outputs = ones) ≡ Σ_i ∂W_i/∂X",
              _diff(d.summed, ref.sum(0)), 1e-6),
        Claim("closed-form", "∂W_i/∂X ≡ (e_i − p) yᵀ (max |Δ| over the Jacobian)", _diff(ref, d.closed), 1e-6),
        Claim("hessians-agree", f"Hessian of W_{config.output}: the {len(HESSIANS)} methods agree (max |Δ|)",
              max(_diff(h, H) for h in d.hessians.values()), 1e-6),
        Claim.yes_no("hessians-two-algorithms", "the four Hessians are two algorithms, each twice: torch.func.hessian "
                     "≡ jacfwd(jacrev(f)) and autograd.functional.hessian (defaults) ≡ the loop over the gradient, "
                     "bitwise", all(torch.equal(d.hessians[a], d.hessians[b]) for a, b in SAME_ALGORITHM)),
        Claim("hessian-finite-differences", "Hessian ≡ central finite differences (float64, h = 1e-4)",
              _diff(H, d.fd), 1e-6),
        Claim("hessian-symmetric", "Hessian is symmetric: max |H − Hᵀ|",
              _diff(H.reshape(n, n), H.reshape(n, n).T), 1e-12),
    ]


def tables_of(config: Config, d: Derivatives) -> list[Table]:
    ref, H = d.jacobian, d.hessians["jacfwd(jacrev(f))"]
    k, m = H.shape[0], H.shape[1]
    return [
        Table("the question: W = log softmax(X y)",
              [Column(header=""), *(Column(header=f"{i}", format=".6f") for i in range(k))],
              [["W", *d.W.tolist()], ["p = softmax(X y)", *d.p.tolist()]]),
        _matrix_table(f"torch.autograd.grad(W, X, grad_outputs=ones): one {k}×{m} matrix, Σ_i ∂W_i/∂X", d.summed,
                      note=f"without grad_outputs PyTorch says: {d.error}"),
        *[_matrix_table(f"∂W_{i}/∂X (Jacobian slice {i}) = (e_{i} − p) yᵀ", ref[i]) for i in range(k)],
        Table("the full Jacobian five ways",
              [Column(header="method"), Column(header="passes"), Column(header="max |Δ| from loop", format=".2e"),
               Column(header="ms", format=".3f")],
              [[name, _passes(name, k, m), _diff(J, ref), 1000 * d.timings[name]] for name, J in d.jacobians.items()]),
        Table(f"Hessian of W_{config.output} with respect to X ({k}×{m}×{k}×{m})",
              [Column(header="method"), Column(header="max |Δ| from jacfwd(jacrev)", format=".2e")],
              [[name, _diff(h, H)] for name, h in d.hessians.items()] + [["finite differences", _diff(d.fd, H)]]),
        _matrix_table(f"Hessian of W_{config.output}, flattened to {k * m}×{k * m} (row-major X)",
                      H.reshape(k * m, k * m)),
    ]


def _passes(name: str, k: int, m: int) -> str:
    return {"loop over outputs": f"{k} backward", "torch.func.jacfwd": f"{k * m} tangents, batched",
            "autograd.functional.jacobian": f"{k} backward"}.get(name, f"{k} cotangents, batched")


def _matrix_table(title: str, M: torch.Tensor, note: str = "") -> Table:
    rows = [[f"row {r}", *M[r].tolist()] for r in range(M.shape[0])]
    columns = [Column(header=""), *(Column(header=f"col {c}", format=".6f") for c in range(M.shape[1]))]
    return Table(title, columns, rows, note)


def scaling(config: Config, device, progress) -> tuple[list[list], dict]:
    """Median time of each method on f(x) = tanh(Ax) for every n in --sizes."""
    sizes = [int(float(s)) for s in config.sizes.split(",")]
    g = torch.Generator().manual_seed(config.seed)
    rows, raw = [], {}
    for i, n in enumerate(sizes):
        A = (torch.randn(n, n, generator=g) / math.sqrt(n)).to(device)
        x = torch.randn(n, generator=g).to(device)

        def f(v, A=A):
            return torch.tanh(A @ v)

        ms = {}
        for name, method in METHODS.items():
            method(f, x)  # warm-up
            times = []
            for _ in range(config.repeats):
                start = time.perf_counter()
                method(f, x)
                times.append(1000 * (time.perf_counter() - start))
            ms[name] = statistics.median(times)
        raw[n] = ms
        rows.append([n, *ms.values(), ms["loop over outputs"] / ms["vmap of vjp"]])
        progress(f"--scaling n = {n}", i + 1, len(sizes))
    return rows, raw
