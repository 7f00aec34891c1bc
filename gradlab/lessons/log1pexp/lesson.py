"""Custom gradients: log(1 + exp(x)) and its NaN gradient at x = 100 in float32.

f(x) = log(1 + eˣ) (softplus) has the derivative f'(x) = eˣ/(1 + eˣ) = sigmoid(x), which is always in [0, 1].

Where the NaN comes from. Autograd never forms eˣ/(1 + eˣ): it runs the chain rule backwards through the ops as
written, e = exp(x), u = 1 + e, y = log(u), one op at a time:

    dy/du = 1/u          log's backward       x = 100, float32: u = inf, so 1/inf = 0
    dy/de = dy/du        add's backward       0
    dy/dx = dy/de · e    exp's backward       0 · inf = NaN

eˣ overflows float32 from x ≈ 88.72 (exp(88) = 1.65e38, exp(89) = inf). The table "the backward pass link by
link" measures every link with `torch.autograd.grad` on the intermediates (chain).

The classic trap: `torch.where(x < 20, log(1 + exp(x)), x)` fixes the value but not the gradient. `where`'s
backward sends the unused branch exactly 0, and the branch's own backward turns it into 0 · inf = NaN again. The
fix is to guard the branch's *input* too, the "double where", so that the unused branch computes something finite:

    xs = where(x < 20, x, 0)                 the unused branch now sees exp(0) = 1
    y  = where(x < 20, log(1 + exp(xs)), x)  its backward is 0 · 1 = 0: dy/dx = 1 at x = 100

The fully right version is a custom Function: a stable forward, and a backward written with differentiable ops on x:

    forward:   max(x, 0) + log1p(exp(−|x|))    (never overflows: exp of a non-positive number)
    backward:  dy · sigmoid(x)                  (torch records it: the second derivative is right too)

---

In the code: naive and where_guard are the two ways above that give NaN; METHODS sets them beside the fixes (the
double where and the stable Function, which the exercises log1pexp.softplus and log1pexp.Log1pExp ask you to
write), the tutorial's custom gradient and `F.softplus`, which switches to x above its threshold 20
(torch/nn/functional.py). For x ≪ 0 the naive value and the tutorial's value and gradient come out 0: 1 + e rounds
to 1 and log(1) = 0, where the answer is eˣ (log1p avoids that; the naive gradient, e/u, stays right).

The tutorial's fix is a custom gradient (its text breaks off in `grad`; tf.custom_gradient's docstring example has
backward dy · (1 − 1/(1 + e)), e = eˣ): at x = 100 the gradient is 1 − 1/inf = 1, the value still inf. Two ports:

  * PortEOnCtx computes e in `forward` and keeps it on ctx (`ctx.e = e`): the same values and first derivative,
    but autograd records nothing inside `forward` (the lesson measures that the stored e has no grad_fn), so the
    backward's e is a constant. A second derivative either raises or silently leaves out the f'' term:
    d²/dx² Σ f(x)² comes out 2f'² instead of 2f'² + 2f·f''.
  * FaithfulPort saves x and recomputes e = exp(x) inside `backward`: its second derivative is autograd's
    e · 1/(1 + e)², right in float64 on −5…5 but not wherever eˣ is finite: in float32 1/(1 + e)² leaves the normal
    floats long before e overflows, so f'' loses digits, then is exactly 0 while the exact f'' = e⁻ˣ/(1 + e⁻ˣ)² is
    still a normal float, and is NaN (0 · inf) once e overflows. The table "the faithful port's f'' in float32"
    measures where, against mpmath, with subnormals kept (PyTorch) and flushed to zero (TF-1 on CPU).

What survives a second backward is what `backward` computes with torch ops from the tensors it was given: the saved
inputs (or outputs) and dy (PyTorch's `FunctionCtx.save_for_backward` documentation; the lesson's page quotes it).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import mpmath
import numpy as np
import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

from gradlab.kit import autograd_graph
from gradlab.kit.result import Claim, Column, Result, Table
from gradlab.lessons.log1pexp import second
from gradlab.lessons.log1pexp.settings import Config  # the settings, declared once (no torch: --help reads them)

DTYPES = {"float32": torch.float32, "float64": torch.float64}
DEFAULT_X = "-100,-20,0,20,88,89,100,1000"
CLAIM_X = 100.0  # the tutorial's x: where float32's naive gradient is NaN
ULP_BOUND = 4  # "within a few ulps"
GUARD = 20.0  # the where guards switch to y = x from here on (log(1 + e²⁰) = 20 + 2e-9)


# The code `--explain` shows beside the math, read from this file at run time.
EXPLAIN = ("naive", "where_guard", "chain", "PortEOnCtx", "FaithfulPort")
EXPLAIN_SHORT = ("naive", "where_guard")  # what --explain prints in full; it names the others


# ---------------------------------------------------------------------------------------------------------------
# Ways to compute log(1 + eˣ) and its gradient.
# ---------------------------------------------------------------------------------------------------------------

def naive(x: torch.Tensor) -> torch.Tensor:
    """log(1 + eˣ) as written; once eˣ overflows, log's backward gives 1/inf = 0 and exp's 0 · inf = NaN."""
    return torch.log(1 + torch.exp(x))


def where_guard(x: torch.Tensor) -> torch.Tensor:
    """The trap: the value is fixed, but the unused branch still runs its backward on the 0 it receives: 0 · inf."""
    return torch.where(x < GUARD, torch.log(1 + torch.exp(x)), x)


def double_where(x: torch.Tensor) -> torch.Tensor:
    """The fix for where: guard the branch's input too, so the unused branch computes exp(0) and its backward 0 · 1."""
    xs = torch.where(x < GUARD, x, torch.zeros_like(x))  # the unused branch never sees a large x
    return torch.where(x < GUARD, torch.log(1 + torch.exp(xs)), x)


class PortEOnCtx(torch.autograd.Function):
    """A PyTorch port of the tutorial's custom gradient that keeps e = eˣ from forward on ctx: the porting trap."""

    @staticmethod
    def forward(ctx, x):
        e = torch.exp(x)  # autograd records nothing inside forward: e has no grad_fn, no link to x
        ctx.e = e
        return torch.log(1 + e)  # tf.log(1 + e): still inf in float32 at x = 100

    @staticmethod
    def backward(ctx, dy):
        return dy * (1 - 1 / (1 + ctx.e))  # d/dx log(1 + eˣ) = 1 − 1/(1 + eˣ); ctx.e is a constant here


class FaithfulPort(torch.autograd.Function):
    """The tutorial's custom gradient with TF-1's derivatives: save x, recompute e = exp(x) inside backward (TF-1's
    grad used the forward's graph tensor Exp(x), which a second tf.gradients differentiated)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log(1 + torch.exp(x))  # the same value as the tutorial's: inf at x = 100 in float32

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        e = torch.exp(x)  # recorded when create_graph=True, like TF's graph tensor Exp(x)
        return dy * (1 - 1 / (1 + e))


class PortEOnCtxOnce(PortEOnCtx):
    """The e-on-ctx port marked @once_differentiable, as PyTorch's docs advise for a backward that cannot be
    differentiated: some ways of asking for a second derivative now raise (not all: see the table)."""

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        return dy * (1 - 1 / (1 + ctx.e))


class StableLog1pExp(torch.autograd.Function):
    """Stable forward, and a backward made of differentiable ops on x: right values, gradients and Hessians."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))  # max(x, 0) + log(1 + e^−|x|)

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        # f'(x) = sigmoid(x), written so that nothing overflows: with z = e^−|x| ∈ (0, 1],
        # sigmoid(x) = 1/(1 + z) for x ≥ 0 and z/(1 + z) for x < 0. torch.sigmoid(−100) in float32 is 0: e^100
        # overflows to inf and 1/(1 + inf) = 0 (torch.sigmoid(−88) is still the subnormal 6.05e-39); this form keeps
        # the tiny 3.7e-44. (The exercise's dy · torch.sigmoid(x) passes too: it differs from this by less than
        # 1e-38, far inside the check's tolerance.) Both branches are finite, so where() is safe here, and autograd
        # records these ops when create_graph=True: the second derivative is right too. (Not exp(−x.abs()): autograd
        # takes d|x|/dx = 0 at x = 0, which would make the second derivative 0 there instead of 1/4.)
        z = torch.exp(torch.where(x >= 0, -x, x))
        return dy * torch.where(x >= 0, 1 / (1 + z), z / (1 + z))


METHODS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "naive log(1+exp(x))": naive,
    "torch.where guard": where_guard,
    "double where": double_where,
    "tutorial's custom gradient (ported)": FaithfulPort.apply,  # PortEOnCtx gives the same values and gradients
    "stable Function": StableLog1pExp.apply,
    "F.softplus": F.softplus,
}

# The custom Functions whose second derivatives the lesson compares.
FUNCTIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "e on ctx": PortEOnCtx.apply,
    "faithful: e from x": FaithfulPort.apply,
    "e on ctx, once_differentiable": PortEOnCtxOnce.apply,
    "stable Function": StableLog1pExp.apply,
}


def exact(x: float) -> tuple[float, float]:
    """log(1 + eˣ) and sigmoid(x) with 50 significant digits (mpmath), rounded to float64."""
    with mpmath.workdps(50):
        X = mpmath.mpf(x)
        return float(mpmath.log1p(mpmath.exp(X))), float(1 / (1 + mpmath.exp(-X)))


def value_and_grad(method: Callable, x: float, dtype: torch.dtype) -> tuple[float, float]:
    t = torch.tensor(x, dtype=dtype, requires_grad=True)
    y = method(t)
    (g,) = torch.autograd.grad(y, t)
    return float(y.detach()), float(g)


def ulps(value: float, reference: float, dtype: torch.dtype) -> float:
    """|value − reference| in units of the spacing of `dtype` numbers at the reference (inf if not finite)."""
    if not math.isfinite(value):
        return math.inf
    np_dtype = np.float32 if dtype == torch.float32 else np.float64
    ref = np_dtype(reference)
    spacing = float(np.spacing(np.abs(ref))) if ref != 0 else float(np.finfo(np_dtype).smallest_subnormal)
    return abs(value - float(ref)) / spacing


# ---------------------------------------------------------------------------------------------------------------
# The backward pass link by link: autograd.grad of y with respect to each intermediate.
# ---------------------------------------------------------------------------------------------------------------

CHAIN_GUARDS = ("naive", "torch.where guard", "double where")


def chain(guard: str, x: float, dtype: torch.dtype = torch.float32) -> dict[str, float]:
    """Every intermediate of log(1 + exp(t)) and the gradient autograd sends to it, for one of CHAIN_GUARDS.

    t is exp's input: a copy of x (naive, where guard) or where(x < 20, x, 0) (double where), so dy/dt is what
    exp's backward returned, before the x branch of where adds its 1 to dy/dx."""
    xt = torch.tensor(x, dtype=dtype, requires_grad=True)
    t = torch.where(xt < GUARD, xt, torch.zeros_like(xt)) if guard == "double where" else xt.clone()
    e = torch.exp(t)
    u = 1 + e
    branch = torch.log(u)
    y = branch if guard == "naive" else torch.where(xt < GUARD, branch, xt)
    grads = torch.autograd.grad(y, [branch, u, e, t, xt])
    values = {"t": t, "e": e, "u": u, "branch": branch, "y": y}
    return {**{k: float(v.detach()) for k, v in values.items()},
            **{f"dy/d{k}": float(g) for k, g in zip(("branch", "u", "e", "t", "x"), grads, strict=True)}}


def graphs(config: Config) -> list[autograd_graph.Graph]:
    """The backward graph at the tutorial's x = 100 in float32: naive (the NaN is born in exp's backward), the
    where guard (the same NaN, through the unused branch) and the stable Function (one node, finite)."""
    out = []
    look = {"naive": "look at: ExpBackward0, outlined: 0 arrives, × exp(100) = inf sends NaN",
            "torch.where guard": "look at: the unused branch still runs ExpBackward0: the same NaN, through where",
            "stable Function": "look at: one node with its own backward, finite: the custom gradient"}
    for name, fn in (("naive", naive), ("torch.where guard", where_guard), ("stable Function", StableLog1pExp.apply)):
        x = torch.tensor(CLAIM_X, requires_grad=True)
        with autograd_graph.record():
            y = fn(x)
        out.append(autograd_graph.trace(y, title=f"log1pexp, {name}: y = log(1 + eˣ) at x = {CLAIM_X:g} (float32)",
                                        names={"x": x}, note=look[name]))
    return out


def chain_table(x: float, chains: dict[str, dict[str, float]]) -> Table:
    links = [("t", "exp's input: x, or where(x < 20, x, 0)"), ("e", "e = exp(t)"), ("u", "u = 1 + e"),
             ("branch", "log(u)"), ("y", "the output"),
             ("dy/dbranch", "where's backward: 0 to the unused branch (naive: 1)"),
             ("dy/du", "log's backward: dy/dbranch · 1/u"), ("dy/de", "add's backward: passes dy/du on"),
             ("dy/dt", "exp's backward: dy/de · e"), ("dy/dx", "dy/dt, + 1 from where's x branch")]
    return Table(f"the backward pass link by link at x = {x:g} (float32): torch.autograd.grad of y on each "
                 f"intermediate",
                 [Column(header=""), Column(header="what autograd computes"),
                  *(Column(header=g, format=".9g") for g in CHAIN_GUARDS)],
                 [[k, what, *[chains[g][k] for g in CHAIN_GUARDS]] for k, what in links],
                 note="0 · inf = NaN is made in exp's backward; the 0 arriving there is exact in all three columns")


def run(config: Config, device: torch.device | None = None,
        progress: Callable[[str, int, int], None] = lambda *a: None) -> Result:
    """The table of values and gradients, the chain, the second derivatives, and the claims. Pure: no printing.
    (CPU: the point is float rounding.)"""
    xs = [float(v) for v in config.x.split(",")]
    notes = []
    if CLAIM_X not in xs:  # the claims are about the tutorial's point: it must be in the table they refer to
        xs = sorted([*xs, CLAIM_X])
        notes.append(f"x = {CLAIM_X:g}, the tutorial's point that the claims are about, was added to the table")
    dtypes = list(DTYPES) if config.dtype == "both" else [config.dtype]
    tables, metrics = [], {}
    for i, name in enumerate(dtypes):
        table, metrics[name] = value_table(name, xs)
        tables.append(table)
        progress(f"{name} table", i + 1, len(dtypes))

    # The NaN, link by link, at the tutorial's point in float32.
    metrics["chain"] = {g: chain(g, CLAIM_X) for g in CHAIN_GUARDS}
    tables.append(chain_table(CLAIM_X, metrics["chain"]))
    port_100 = value_and_grad(PortEOnCtx.apply, CLAIM_X, torch.float32)

    # Second derivatives, every Function, every route.
    table, seconds = second_derivative_table()
    tables.append(table)
    metrics.update(seconds)
    kept, flushed = second.f2_float32(FaithfulPort.apply, False), second.f2_float32(FaithfulPort.apply, True)
    metrics["faithful_f2_float32"] = {"subnormals kept": kept, "flushed to zero": flushed}
    tables.append(second.f2_float32_table(kept, flushed))
    if flushed is None:
        notes.append("this CPU cannot flush subnormals to zero (torch.set_flush_denormal): TF-1's CPU case is not "
                     "measured")
    progress("second derivatives", 1, 1)
    return Result(lesson="log1pexp", title="custom gradients: log(1 + exp(x)) without NaN",
                  seed=config.seed, metrics=metrics, claims=claims(dtypes, metrics, port_100), tables=tables,
                  notes=[*notes, "NaN and inf are shown in red; the stable Function's errors are measured in ulps "
                         "(spacing of the dtype's numbers at the exact answer)"])


def value_table(name: str, xs: list[float]) -> tuple[Table, list[dict]]:
    """Value and gradient at each of XS in dtype NAME, every method beside the exact answer: the table, and per x
    what each method gave and the stable Function's error in ulps."""
    dtype = DTYPES[name]
    rows, per_x = [], []
    for x in xs:
        v_exact, g_exact = exact(x)
        results = {}
        for method_name, method in METHODS.items():
            v, g = value_and_grad(method, x, dtype)
            results[method_name] = {"value": v, "grad": g}
        rows += [[x, "value", *(r["value"] for r in results.values()), v_exact],
                 [x, "gradient", *(r["grad"] for r in results.values()), g_exact]]
        stable = results["stable Function"]
        per_x.append({"x": x, "exact": {"value": v_exact, "grad": g_exact}, **results,
                      "stable_ulps": {"value": ulps(stable["value"], v_exact, dtype),
                                      "grad": ulps(stable["grad"], g_exact, dtype)}})
    return Table(f"{name}: log(1 + eˣ) and d/dx, {len(METHODS)} ways, beside the exact answer (50 digits)",
                 [Column(header="x", format=".6g"), Column(header=""),
                  *(Column(header=h, format=".9g") for h in [*METHODS, "exact"])], rows), per_x


def second_derivative_table() -> tuple[Table, dict]:
    """Every custom Function's second derivative, asked every way (float64): the table, and the metrics."""
    seconds = {name: second.second_derivatives(fn) for name, fn in FUNCTIONS.items()}
    gchecks = {name: second.checks(fn) for name, fn in FUNCTIONS.items()}
    no_graph = second.stored_e_has_no_graph(PortEOnCtx.apply)
    once_zeros = second.hessian_is_zero(PortEOnCtxOnce.apply)
    metrics = {"once_differentiable_hessian_all_zero": once_zeros,
               "port_second_minus_2f1sq": second.port_without_f2_term(PortEOnCtx.apply),
               "second_derivatives": seconds,
               "checks": {name: {"gradcheck": c[0], "gradgradcheck": c[1]} for name, c in gchecks.items()},
               "stored_e_has_grad_fn": not no_graph}
    table = Table("the second derivative of each custom Function, asked four ways with torch.autograd (float64, x = "
                  "−5..5): max |Δ| from the exact f'' = sigmoid'(x) or d²/dx² f² = 2f'² + 2f·f'', or what it raised",
                  [Column(header="Function"), Column(header="gradcheck"), Column(header="gradgradcheck"),
                   *(Column(header=r, format=".3g") for r in second.SECOND_ROUTES)],
                  [[name, _ok(gchecks[name][0]), _ok(gchecks[name][1]),
                    *[seconds[name][r] for r in second.SECOND_ROUTES]]
                   for name in FUNCTIONS],
                  note=f"measured: the e the port keeps on ctx has a grad_fn: {'no' if no_graph else 'yes'} "
                       f"(autograd records nothing inside forward); autograd.functional.hessian of the "
                       f"@once_differentiable port returned all zeros: {'yes' if once_zeros else 'no'}")
    return table, metrics


def claims(dtypes: list[str], metrics: dict, port_100: tuple[float, float]) -> list[Claim]:
    measured = [m for name in dtypes for m in metrics[name]]  # every x in every dtype
    worst_value_ulps = max([0.0, *(m["stable_ulps"]["value"] for m in measured)])
    worst_grad_ulps = max([0.0, *(m["stable_ulps"]["grad"] for m in measured)])
    double_where_errors = [abs(m["double where"]["grad"] - m["exact"]["grad"])
                           if math.isfinite(m["double where"]["grad"]) else math.nan for m in measured]
    naive_c, where_c = metrics["chain"]["naive"], metrics["chain"]["torch.where guard"]
    once = metrics["second_derivatives"]["e on ctx, once_differentiable"]
    faithful = metrics["second_derivatives"]["faithful: e from x"]
    return [
        Claim.yes_no("naive-nan-at-100", "naive gradient at x = 100 in float32 is NaN", math.isnan(naive_c["dy/dx"])),
        Claim.yes_no("naive-nan-is-0-times-inf", "naive, x = 100: log's backward gives dy/du = 1/inf = 0, and the "
                     "NaN appears in exp's backward, 0 · e with e = inf (dy/du = dy/de = 0, e = inf, dy/dt NaN)",
                     naive_c["dy/du"] == 0 and naive_c["dy/de"] == 0 and math.isinf(naive_c["e"])
                     and math.isnan(naive_c["dy/dt"])),
        Claim.yes_no("where-guard-nan-at-100", "torch.where guard: the gradient at x = 100 in float32 is still NaN",
                     math.isnan(where_c["dy/dx"])),
        Claim.yes_no("where-guard-0-times-inf", "torch.where guard, x = 100: the unused branch receives exactly 0 "
                     "(not NaN), and its own backward makes the NaN: 0 · inf in exp's backward",
                     where_c["dy/dbranch"] == 0 and where_c["dy/de"] == 0 and math.isinf(where_c["e"])
                     and math.isnan(where_c["dy/dt"])),
        Claim("double-where-grad", f"double where (the branch's input guarded too): gradient ≡ sigmoid(x) at every x "
              f"({', '.join(dtypes)}; max |Δ|, NaN if one is not finite)",
              max(double_where_errors) if not any(math.isnan(v) for v in double_where_errors) else math.nan, 1e-6),
        Claim.yes_no("port-value-inf", "tutorial's custom gradient (ported): gradient at x = 100 (float32) is 1, but "
                     "the value is inf", port_100[1] == 1.0 and math.isinf(port_100[0])),
        Claim("stable-value-ulps", f"stable Function: value within a few ulps of exact at every x "
              f"({', '.join(dtypes)})", worst_value_ulps, ULP_BOUND),
        Claim("stable-grad-ulps", f"stable Function: gradient within a few ulps of exact at every x "
              f"({', '.join(dtypes)})", worst_grad_ulps, ULP_BOUND),
        Claim.yes_no("stable-gradcheck", "stable Function passes gradcheck and gradgradcheck",
                     all(metrics["checks"]["stable Function"].values())),
        Claim("port-e-on-ctx-second-wrong", "port keeping e on ctx: d²/dx² Σ f(x)² by autograd.grad twice comes "
              "out 2f'², silently missing the 2f·f'' term (max |Δ| from 2f'²)", metrics["port_second_minus_2f1sq"],
              1e-12),
        Claim("faithful-port-second-right", "faithful port (e recomputed from the saved x in backward, equivalent "
              "to TF-1's graph tensor e): f'' ≡ sigmoid'(x) in float64, x in [−5, 5] (max |Δ|)",
              _number(faithful["f'': grad twice of Σ f"]),
              1e-12),
        *f2_float32_claims(metrics["faithful_f2_float32"]),
        Claim.yes_no("once-differentiable-raises", "@once_differentiable: .backward() through the gradient raises "
                     "instead of giving a wrong number",
                     once["Σ f²: .backward() on the grad"] == 'raises "trying to differentiate twice"'),
    ]


def f2_float32_claims(f2: dict) -> list[Claim]:
    """Where the faithful port's f'' breaks in float32, with subnormals kept and (where this CPU can) flushed."""
    kept, flushed = f2["subnormals kept"], f2["flushed to zero"]
    out = [Claim.yes_no("faithful-port-f2-float32-underflows", f"faithful port, float32: f'' within "
                        f"{second.F2_RIGHT:.1%} of exact up to x = {kept['last_right_x']}, then 0 from x = "
                        f"{kept['first_zero_x']} where eˣ is finite and the exact f'' "
                        f"({kept['exact_at_first_zero']:.2g}) is a normal float, NaN from x = {kept['first_nan_x']}",
                        kept["last_right_x"] < kept["first_zero_x"] < kept["first_nan_x"]
                        and kept["exact_at_first_zero"] >= second.TINY
                        and math.isfinite(math.exp(kept["first_zero_x"])))]
    if flushed is not None:
        out.append(Claim.yes_no("faithful-port-f2-float32-flushed", f"the same with subnormals flushed to zero (TF-1 "
                                f"on CPU): 0 from x = {flushed['first_zero_x']}, earlier",
                                flushed["first_zero_x"] < kept["first_zero_x"]))
    return out


def _number(v: float | str) -> float:
    """A route's max |Δ|, or NaN when it raised (a claim on a number that does not exist fails)."""
    return v if isinstance(v, float) else math.nan


def _ok(flag: bool) -> str:
    return "passes" if flag else "FAILS"
