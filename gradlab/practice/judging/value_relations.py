"""One output of a wrong answer on one input, related to the expected by experiment: a scale a quantity of the input
names, the sign, the transpose, an offset, another output's expected value, a known mistake's output or one of the
exercise's relations, NaN where the expected is finite, float32's rounding: each relation measured, as a Finding."""

from __future__ import annotations

import warnings
from typing import Any

import torch

from gradlab.kit.exercise import Checks, num, values
from gradlab.kit.measure import RELATE, close, flat, same_key, simple, vector


class Lab:
    """The outputs of the reference, the mistakes, relations and variants on each input, computed once, on demand."""

    def __init__(self, checks: Checks, cases: list[dict]) -> None:
        self.checks, self.cases, self._memo = checks, cases, {}

    def out(self, what, i: int) -> dict | None:
        key = (id(what), i)
        if key not in self._memo:
            try:
                with warnings.catch_warnings():  # a known mistake's broadcasting warns: not the student's output
                    warnings.simplefilter("ignore")
                    self._memo[key] = values(self.checks.run(what, self.cases[i]))
            except Exception:  # a relation that does not apply to this input (e.g. a shape it cannot take)
                self._memo[key] = None
        return self._memo[key]



class Finding:
    """One relation measured of one output on one input: KIND (scale, zero, is…), a signature that two inputs (or two
    outputs) share when the same relation holds on both, the words, the fix when one is known, and a priority (lower
    first) that decides between relations covering as many inputs."""

    def __init__(self, kind: str, sig: Any, words: str, hint: str = "", detail: str = "*", prio: int = 5,
                 value: float | None = None) -> None:
        self.kind, self.sig, self.words, self.hint, self.detail, self.prio = kind, sig, words, hint, detail, prio
        self.value = value  # the quantity's value on this input, said as "{values}" in the words


def named_scales(c: float, quantities: list[tuple[str, Any, str]]) -> list[tuple[str, float, str]]:
    """Every (symbol, value, meaning) of the input's quantities that c equals: q itself first, then 1/q and −q
    (unless the exercise lists that one with a meaning of its own)."""
    listed = {sym for sym, v, _ in quantities}
    numbers = [(sym, float(v), meaning) for sym, v, meaning in quantities
               if not isinstance(v, torch.Tensor) and float(v) != 0]
    out = [(sym, v, meaning) for sym, v, meaning in numbers if abs(c - v) <= 1e-3 * abs(v)]
    for sym, v, meaning in numbers:
        inverse = sym[2:] if sym.startswith("1/") else (f"{sym.split('/')[1]}/{sym.split('/')[0]}" if "/" in sym
                                                        else f"1/{sym}")
        for value, s in ((1 / v, inverse), (-v, f"−{sym}")):
            if s not in listed and abs(c - value) <= 1e-3 * abs(value):
                out.append((s, value, f"{sym}: {meaning}"))
    return out


def elementwise(A: torch.Tensor, Bv: torch.Tensor, a_shape, quantities) -> list[Finding]:
    """yours = q ⊙ expected, expected / q, or expected ± q, for a tensor quantity q of the input (σ, dy…)."""
    found = []
    for sym, q, meaning in quantities:
        if not isinstance(q, torch.Tensor):
            continue
        try:
            Q = torch.broadcast_to(q.detach().double(), a_shape).reshape(-1)
        except RuntimeError:
            continue
        for rel, value, s in (("scale", Q * Bv, f"{sym} ⊙ expected"), ("scale", Bv / Q, f"expected / {sym}"),
                              ("plus", Bv + Q, f"expected + {sym}"), ("plus", Bv - Q, f"expected − {sym}"),
                              ("plus", Q - Bv, f"{sym} − expected")):
            if close(A, value):
                found.append(Finding(rel, (rel, s), f"= {s}, elementwise ({sym}: {meaning})", detail=s, prio=3))
        found += _plus_multiple(A, Bv, Q, sym, meaning) if not found else []
    return found


def _plus_multiple(A: torch.Tensor, Bv: torch.Tensor, Q: torch.Tensor, sym: str, meaning: str) -> list[Finding]:
    """yours − expected = k · q or k · ln q, for a tensor quantity q and a small k (½, 2, −1…): a term of the formula
    with the wrong coefficient (−½ ln σ where −ln σ belongs)."""
    d = A - Bv
    if not torch.isfinite(d).all() or float(d.norm()) <= RELATE * float(Bv.norm()):
        return []
    terms = [(sym, Q)] + ([(f"ln {sym}", Q.log())] if bool((Q > 0).all()) else [])
    for name, T in terms:
        nt = float(T.norm())
        if nt == 0 or bool((T[0] == T).all()):  # a constant is an offset, said by _offset
            continue
        k = float(d @ T) / nt**2
        said = simple(k)
        if said and float((d - k * T).norm()) <= RELATE * max(float(d.norm()), float(Bv.norm())):
            term = name if said == "1" else f"−{name}" if said == "−1" else f"{said}·{name}"
            sign, bare = ("−", term[1:]) if term.startswith("−") else ("+", term)
            return [Finding("plus", ("plus", term), f"= expected {sign} {bare}, elementwise ({sym}: {meaning}): a term "
                            f"in {name} with the wrong coefficient (or one that should not be there)", detail=term,
                            prio=3)]
    return []


def spot_words(checks: Checks, case: dict, key: str, bad: torch.Tensor) -> str:
    """Where in the output the difference is, by the input's coordinates (x = 0 only, where x < 0, |x| ≥ 89)."""
    where = checks.spot(case, key)
    if where is None or bad.all() or not bad.any():
        return ""
    coords, name = where
    x = coords.detach().double().reshape(-1)
    if x.shape != bad.shape:
        return ""
    wrong = x[bad]
    lo = float(wrong.abs().min())
    tests = [(f"only at {name} = 0", x == 0), (f"where {name} < 0", x < 0), (f"where {name} > 0", x > 0),
             (f"where {name} ≥ {num(float(wrong.min()))}", x >= wrong.min()),
             (f"where {name} ≤ {num(float(wrong.max()))}", x <= wrong.max()),
             (f"where |{name}| ≥ {num(lo)}", x.abs() >= lo)]
    for words, mask in tests:
        if torch.equal(mask, bad):
            return words
    shown = list(dict.fromkeys(num(float(v)) for v in wrong[:50]))
    return f"at {name} = {', '.join(shown[:5])}" + (" …" if len(shown) > 5 else "")


def relate(checks: Checks, lab: Lab, i: int, key: str, mine, expected, outputs_i: dict, refs_i: dict
           ) -> list[Finding]:
    """Every relation that holds between the student's output KEY and the expected one on input I (the shapes are
    the expected ones), most telling first; "differs" when none does."""
    case = lab.cases[i]
    a, b = flat(mine), flat(expected)
    base = checks.base(case).get(key) if checks.base else None
    A, Bv = vector(a), vector(b)
    upd = " update" if base is not None else ""
    if base is not None:
        base_v = vector(flat(base))
        A, Bv = A - base_v, Bv - base_v
    nonfinite = _nonfinite(checks, case, key, A, Bv, one_tensor=len(a) == 1)
    if nonfinite is not None:
        return [nonfinite]
    nb, na = float(Bv[torch.isfinite(Bv)].norm()), float(A[torch.isfinite(A)].norm())
    found = _swapped(checks, key, a, b, outputs_i, refs_i, moved=na > 0)
    if nb == 0:
        return [*found, Finding("nonzero", ("nonzero",), f"is not 0 where 0 is expected (its norm is {num(na)})",
                                prio=3)]
    found += _known(lab, i, key, mine, expected, outputs_i, refs_i)
    if na <= 1e-12 * nb:
        found.append(Finding("zero", ("zero",), "did not move (the update is 0)" if base is not None else
                             "is 0 everywhere", prio=2))
        return found
    quantities = checks.quantities(case)
    found += _scaled(A, Bv, nb, quantities, upd)
    found += _offset(A, Bv, nb, upd)
    if len(a) == 1 and a[0].dim() == 2 and a[0].shape[0] == a[0].shape[1] and close(a[0].T.double(),
                                                                                   b[0].double()):
        found.append(Finding("transpose", ("transpose",), "is the transpose of the expected", detail="transpose",
                             prio=2))
    if len(a) == 1:
        found += elementwise(A, Bv, a[0].shape, quantities)
    return found or [_differs(checks, case, key, A, Bv, b, one_tensor=len(a) == 1, raw=vector(a))]


def _nonfinite(checks: Checks, case: dict, key: str, A: torch.Tensor, Bv: torch.Tensor, *,
               one_tensor: bool) -> Finding | None:
    """NaN or inf in yours where the expected is finite: said first, and alone."""
    bad = ~torch.isfinite(A) & torch.isfinite(Bv)
    if not bad.any():
        return None
    kinds = " and ".join(k for k, m in (("NaN", A.isnan()), ("inf", A.isinf())) if (m & bad).any())
    where = spot_words(checks, case, key, bad) if one_tensor else ""
    share = "everywhere" if bad.all() else where or f"at {int(bad.sum())} of {bad.numel()} entries"
    return Finding("nonfinite", ("nonfinite", kinds, where), f"is {kinds} {share} (the expected is finite)",
                   detail=where or "*", prio=0)


def _swapped(checks: Checks, key: str, a: list, b: list, outputs_i: dict, refs_i: dict, *,
             moved: bool) -> list[Finding]:
    """Yours equals the expected value of another output (two outputs swapped), unless that equals this output's own
    expected (every rank's result is the same mean): then it says nothing. A 0 (not MOVED) counts only when the
    other output has ours."""
    found = []
    for other, theirs in refs_i.items():
        if other != key and (moved or (other in outputs_i and close(
                vector(flat(outputs_i[other])), vector(b)))) and len(flat(theirs)) == len(a) and all(
                x.shape == y.shape for x, y in zip(a, flat(theirs), strict=True)) and close(
                vector(a), vector(flat(theirs))) and not close(vector(flat(theirs)), vector(b)):
            found.append(Finding("swapped", ("swapped", other),
                                 f"= the expected {checks.word(other).removeprefix('the ')}",
                                 detail=other, prio=2))
    return found


def _known(lab: Lab, i: int, key: str, mine, expected, outputs_i: dict, refs_i: dict) -> list[Finding]:
    """Yours equals a known mistake's output, or one of the exercise's relations (another axis, one part…)."""
    found = []
    for m in lab.checks.mistakes:
        theirs = lab.out(m, i)
        if theirs is not None and key in theirs and same_key(mine, theirs[key]) and not same_key(theirs[key],
                                                                                                 expected):
            found.append(Finding("mistake", ("mistake", m.name), f"matches the known mistake \"{m.name}\"",
                                 hint=m.tell(outputs_i, refs_i), detail=m.name, prio=1))
    for r in lab.checks.relations:
        theirs = lab.out(r, i)
        if theirs is not None and key in theirs and same_key(mine, theirs[key]) and not same_key(theirs[key],
                                                                                                 expected):
            found.append(Finding("is", ("is", r.what), f"= {r.what}", hint=r.hint, detail=r.what, prio=1))
    return found


def _offset(A: torch.Tensor, Bv: torch.Tensor, nb: float, upd: str) -> list[Finding]:
    """Yours = the expected + c, one constant c on every entry (of several): a term that depends on no input."""
    d = A - Bv
    if A.numel() < 2 or not torch.isfinite(d).all():
        return []
    c = float(d.mean())
    if abs(c) <= RELATE * nb / A.numel() ** 0.5 or float((d - c).norm()) > RELATE * max(nb, abs(c)):
        return []
    said = simple(c) or num(c)
    return [Finding("plus", ("plus", said), f"= the expected{upd} + {said} on every entry (one constant, the same "
                    "for every element: a term that depends on no input is off)", detail=f"+{said}", prio=4)]


def _scaled(A: torch.Tensor, Bv: torch.Tensor, nb: float, quantities: list, upd: str) -> list[Finding]:
    """Yours = c × the expected: −1 (the sign), c named by a quantity of the input (B, 1/B, lr…), c itself."""
    c = float(A @ Bv) / nb**2
    if not (float((A - c * Bv).norm()) <= RELATE * nb and abs(c - 1) > RELATE):
        return []
    found = []
    verb = "is" if upd else "="
    if abs(c + 1) <= RELATE:
        found.append(Finding("scale", ("scale", "−1"), f"{verb} −1 × the expected{upd}: the sign is flipped",
                             detail="−1", prio=2))
    for sym, value, meaning in named_scales(c, quantities):
        found.append(Finding("scale", ("scale", sym), f"{verb} {sym} × the expected{upd} ({sym} = {{values}}: "
                             f"{meaning})", detail=sym, prio=2, value=value))
    s = simple(c)
    found.append(Finding("scale", ("scale", s or f"{c:.4g}"), f"{verb} {s or f'{c:.4g}'} × the expected{upd}",
                         detail=s or "c", prio=4 if s else 6, value=c))
    return found


def _differs(checks: Checks, case: dict, key: str, A: torch.Tensor, Bv: torch.Tensor, b: list, *,
             one_tensor: bool, raw: torch.Tensor) -> Finding:
    """No relation holds: where yours differs, and float32's rounding when that is all it is: when every number
    of yours (RAW, the output itself) is a float32 number, measured; a small error of another kind is said as not
    float32's ("{most}": the largest relative difference over the inputs the sentence is said for)."""
    diff = (A - Bv).abs()
    bad = diff > 1e-6 * max(float(Bv.abs().max()), 1.0)
    where = spot_words(checks, case, key, bad) if one_tensor else ""
    rel = float(diff.max()) / max(float(Bv.abs().max()), 1.0)
    words = f"differs {where}" if where else "differs"
    rounded = bool(torch.equal(raw.float().double(), raw))  # every number of yours is a float32 number
    c = float(A @ Bv) / max(float(Bv @ Bv), 1e-300)
    if 0 < abs(c - 1) < 1e-5 and float((A - c * Bv).norm()) <= 1e-12 * float(Bv.norm()) and not rounded:
        once = abs(c - 1) <= 2.0**-24  # float32's unit roundoff, 5.96e-8: one rounding of one number to float32
        return Finding("differs", ("differs", "factor"), f"= (1 {'+' if c > 1 else '−'} {abs(c - 1):.2g}) × the "
                       "expected: one factor on every entry, a little off (measured: no entry differs otherwise): "
                       "the factor was computed with less precision than the rest, its error "
                       f"{'within' if once else 'more than'} one float32 rounding (6e-8 relative)", detail="factor",
                       prio=8)
    if rel < 1e-5 and rounded and any(t.dtype == torch.float64 for t in b):  # confirmed: said beside an experiment
        words += (" by at most {most} relative: float32 precision (float32 rounds to within 6e-8 relative; its "
                  "ulp at 1 is 1.2e-7) where float64 is expected")
        return Finding("differs", ("differs", "float32"), words, detail=where or "float32", prio=8, value=rel,
                       hint="a tensor made or cast to float32 on the way (.float(), torch.float32, a float32 buffer "
                            "or bucket) rounds every number: keep the inputs' dtype throughout")
    if rel < 1e-5 and any(t.dtype == torch.float64 for t in b):  # small, and not float32's rounding: say so
        words += (" by at most {most} relative: a small error, and not float32's rounding (measured: your "
                  "numbers carry more digits than float32 holds): look for an approximation (a finite difference, "
                  "a truncated series, an ε added)")
        return Finding("differs", ("differs", "small"), words, detail=where or "small", prio=8, value=rel)
    return Finding("differs", ("differs", where), words, detail=where or "*", prio=9)
