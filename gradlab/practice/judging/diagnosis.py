"""Diagnosis by experiment: what a wrong answer measurably is, in words a student can act on.

A known mistake whose outputs the submission's match on every input is named with its fix. Otherwise the diagnosis
measures, output by output, how the student's outputs relate to the reference's, and says it:

    shapes      every output's shape first, all at once (the transpose, a mean over the batch, an (N, N) broadcast)
    which       which output is wrong, and that every other one is right
    relation    yours = c × expected (c named when it equals a quantity of the input: B, 1/B, K, σ, lr…), the sign,
                the transpose, the other output, zero or unmoved, NaN where the expected is finite, a known mistake's
                output, or one of the exercise's relations (another axis, one part, the first output…)
    where       within a family of inputs that vary one thing (dy = 1 or not, equal or unequal micro-batches,
                terminal or not, one sample or a batch, float64 or float32, the first update or a later one):
                which members it is right for; inside an output, where the difference is (only at x = 0)
    locator     the first input where it fails, the output and index, yours and expected

The references and every alternative are computed in gradlab's process; the student's outputs are data here. The
work is a few passes over outputs of at most a few thousand numbers, and the known mistakes and relations are run on
the exercise's inputs once each, lazily.
"""

from __future__ import annotations

import itertools
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch

from gradlab.kit.exercise import CHANGED, DIFFERENCE, Checks, num, relative, same, values

MATCHES = 1e-5  # a submission "is" a known mistake when its outputs agree with that mistake's this closely
RELATE = 1e-4  # a relation (a scale, the transpose…) holds when what is left is this small next to the expected
SHOWN = 1500  # characters of diagnosis at most


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


# ---------------------------------------------------------------------------------------------------------------
# Numbers as words
# ---------------------------------------------------------------------------------------------------------------

def simple(c: float) -> str | None:
    """c when it is a small integer or the reciprocal of one (2, ½, −1): a factor worth naming by itself."""
    for k in range(1, 11):
        if abs(c - k) <= RELATE * k:
            return str(k)
        if abs(c + k) <= RELATE * k:
            return f"−{k}"
        if abs(c - 1 / k) <= RELATE / k:
            return f"1/{k}"
    return None


def flat(out) -> list[torch.Tensor]:
    if isinstance(out, dict):
        return [t for v in out.values() for t in flat(v)]
    if isinstance(out, list | tuple):
        return [t for v in out for t in flat(v)]
    return [out]


def vector(ts: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.detach().reshape(-1).double() for t in ts]) if ts else torch.zeros(0, dtype=torch.float64)


def close(a: torch.Tensor, b: torch.Tensor, tol: float = RELATE) -> bool:
    """‖a − b‖ ≤ tol·‖b‖ (both finite), or both zero."""
    if a.shape != b.shape or not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        return False
    nb = float(b.norm())
    return float((a - b).norm()) <= tol * max(nb, 1e-300) if nb > 0 else float(a.norm()) == 0


def same_key(a, b, tol: float = MATCHES) -> bool:
    return same({"k": a}, {"k": b}, tol)


# ---------------------------------------------------------------------------------------------------------------
# One output on one input: how yours relates to the expected
# ---------------------------------------------------------------------------------------------------------------

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
    float32's."""
    diff = (A - Bv).abs()
    bad = diff > 1e-6 * max(float(Bv.abs().max()), 1.0)
    where = spot_words(checks, case, key, bad) if one_tensor else ""
    rel = float(diff.max()) / max(float(Bv.abs().max()), 1.0)
    words = f"differs {where}" if where else "differs"
    rounded = bool(torch.equal(raw.float().double(), raw))  # every number of yours is a float32 number
    c = float(A @ Bv) / max(float(Bv @ Bv), 1e-300)
    if 0 < abs(c - 1) < 1e-5 and float((A - c * Bv).norm()) <= 1e-12 * float(Bv.norm()) and not rounded:
        return Finding("differs", ("differs", "factor"), f"= (1 {'+' if c > 1 else '−'} {abs(c - 1):.2g}) × the "
                       "expected: one factor on every entry, a little off (measured: no entry differs otherwise): "
                       "the factor was computed with less precision than the rest (float32 rounds to 6e-8 "
                       "relative, and a sum accumulated in float32 loses more)", detail="factor", prio=8)
    if rel < 1e-5 and rounded and any(t.dtype == torch.float64 for t in b):  # confirmed: said beside an experiment
        words += (f" by at most {rel:.2g} relative: float32 precision (float32 rounds to within 6e-8 relative; its "
                  "ulp at 1 is 1.2e-7) where float64 is expected")
        return Finding("differs", ("differs", "float32"), words, detail=where or "float32", prio=8,
                       hint="a tensor made or cast to float32 on the way (.float(), torch.float32, a float32 buffer "
                            "or bucket) rounds every number: keep the inputs' dtype throughout")
    if rel < 1e-5 and any(t.dtype == torch.float64 for t in b):  # small, and not float32's rounding: say so
        words += (f" by at most {rel:.2g} relative: a small error, and not float32's rounding (measured: your "
                  "numbers carry more digits than float32 holds): look for an approximation (a finite difference, "
                  "a truncated series, an ε added)")
        return Finding("differs", ("differs", "small"), words, detail=where or "small", prio=8)
    return Finding("differs", ("differs", where), words, detail=where or "*", prio=9)


# ---------------------------------------------------------------------------------------------------------------
# Shapes first, all outputs at once
# ---------------------------------------------------------------------------------------------------------------

def shape_relation(a: torch.Tensor, b: torch.Tensor) -> str:
    """Why a has the wrong shape, when it can be told: the transpose, a mean or sum, an (N, N) broadcast."""
    if a.dim() == 2 and b.dim() == 2 and a.shape == b.shape[::-1]:
        return ": the transpose of the expected" if close(a.T.double(), b.double()) else ": transposed?"
    if a.numel() == 1 and b.numel() > 1:
        for how, v in (("the mean", b.double().mean()), ("the sum", b.double().sum())):
            if abs(float(a) - float(v)) <= RELATE * max(abs(float(v)), 1e-12):
                return f": {how} of the expected over all its entries (keep one per element)"
        return ": one number where one per element is expected (a mean or sum too many?)"
    if b.dim() == 1 and a.dim() == 2 and a.shape == (b.shape[0], b.shape[0]):
        return (": an (N, N) matrix where N numbers are expected (an (N, 1) and an (N,) broadcast against each "
                "other, or a whole matrix where its product with a vector is asked?)")
    if a.dim() == b.dim() + 1 and a.shape[-1] == 1 and a.shape[:-1] == b.shape:
        return ": an extra dimension of size 1 (squeeze it)"
    if a.dim() == b.dim() and a.dim() >= 1 and a.shape[1:] == b.shape[1:] and 0 < a.shape[0] < b.shape[0] \
            and close(a.double(), b[:a.shape[0]].double()):
        k, n = a.shape[0], b.shape[0]
        return (f": {'the first row' if k == 1 else f'the first {k} rows'} of the expected {n}, each right (the loop "
                "stopped early: a return inside the loop, or a range that ends too soon)")
    if a.numel() == b.numel() and a.dim() == b.dim() and sorted(a.shape) == sorted(b.shape):
        for perm in itertools.permutations(range(b.dim())):
            if tuple(b.shape[p] for p in perm) == tuple(a.shape) and close(a.double(), b.permute(perm).double()):
                return (f": the expected with its dimensions in another order (yours = expected.permute{perm}): "
                        "stacked or transposed along another dimension")
    if a.numel() == b.numel():
        return ": the right number of entries in another shape (a reshape or a view?)"
    return ""


def shapes(checks: Checks, cases: list[dict], outputs: list[dict], refs: list[dict]) -> tuple[str, set]:
    """One sentence on every output whose shape (or number of tensors) is wrong on some input, and those keys."""
    wrong, words = set(), []
    keys = list(values(refs[0]))
    for key in keys:
        for i, (o, r) in enumerate(zip(outputs, refs, strict=True)):
            if key not in r:
                continue
            mine, exp = flat(o.get(key, [])), flat(r[key])
            if len(mine) != len(exp):
                wrong.add(key)
                words.append(f"{checks.word(key)} has {len(mine)} tensor{'s' * (len(mine) != 1)} where {len(exp)} "
                             f"are expected (on '{cases[i]['label']}')")
                break
            bad = next(((x, y) for x, y in zip(mine, exp, strict=True) if x.shape != y.shape), None)
            if bad is not None:
                wrong.add(key)
                words.append(f"{checks.word(key)} has shape {tuple(bad[0].shape)} where {tuple(bad[1].shape)} is "
                             f"expected on '{cases[i]['label']}'{shape_relation(*bad)}")
                break
    if not words:
        return "", wrong
    right = [checks.word(k) for k in keys if k not in wrong]
    tail = f"; {', '.join(right)} {'has' if len(right) == 1 else 'have'} the right shape" if right else ""
    return "shapes: " + "; ".join(words) + tail, wrong


def dtypes(checks: Checks, cases: list[dict], outputs: list[dict], refs: list[dict], skip: set) -> str:
    for key in values(refs[0]):
        if key in skip:
            continue
        for i, (o, r) in enumerate(zip(outputs, refs, strict=True)):
            mine, exp = flat(o.get(key, [])), flat(r.get(key, []))
            bad = next(((x, y) for x, y in zip(mine, exp, strict=False) if x.dtype != y.dtype), None)
            if bad is not None:
                return (f"{checks.word(key)} comes back as {str(bad[0].dtype)[6:]} where {str(bad[1].dtype)[6:]} "
                        f"is expected (on '{cases[i]['label']}'): a tensor made without dtype= (torch.zeros, "
                        "torch.tensor) is float32; use x.new_zeros(...) or dtype=x.dtype")
    return ""


# ---------------------------------------------------------------------------------------------------------------
# Every output across the inputs, the families, the whole sentence
# ---------------------------------------------------------------------------------------------------------------

def hint_for(checks: Checks, key: str, f: Finding) -> str:
    for k in ((key, f.kind, f.detail), ("*", f.kind, f.detail), (key, f.kind, "*"), ("*", f.kind, "*")):
        if k in checks.hints:
            return checks.hints[k]
    return f.hint


def joined(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def where_words(cover: list[int], wrong: list[int], relevant: list[int], cases: list[dict]) -> str:
    """On which inputs a relation holds, in words: every input, the only wrong one, the wrong ones, or some."""
    right = [i for i in relevant if i not in wrong]
    if len(cover) == len(relevant):
        return "on every input"
    if sorted(cover) == sorted(wrong):
        if len(cover) == 1:
            return f"on '{cases[cover[0]]['label']}' (right on every other input)"
        named = ", ".join(repr(cases[i]["label"]) for i in right[:2]) + (" …" if len(right) > 2 else "")
        return f"on every input where it is wrong (right on {named})"
    return "on " + ", ".join(repr(cases[i]["label"]) for i in cover[:2]) + (" …" if len(cover) > 2 else "")


def explain_outputs(checks: Checks, findings: dict[str, dict[int, list[Finding]]], wrong: dict[str, list[int]],
                    relevant: dict[str, list[int]], cases: list[dict]
                    ) -> tuple[list[str], list[str], list[str], list[str]]:
    """(sentences, fixes, vague ones: "differs" with nothing more, ratios: a factor no quantity names, said after
    the causes and once per output): the relations that explain the most (output, input) pairs, chosen greedily,
    each said once for the outputs it holds on (W and b: the updates are 1/K × the expected update on every
    input)."""
    todo = {(k, i) for k, per in findings.items() for i in per}
    sentences, fixes, vague = [], [], []
    ratios: dict[str, list[tuple[float, int]]] = {}
    while todo:
        cover: dict[Any, list[tuple[str, int]]] = {}
        best: dict[Any, Finding] = {}
        for (k, i) in todo:
            for f in findings[k][i]:
                cover.setdefault(f.sig, []).append((k, i))
                if f.sig not in best or f.prio < best[f.sig].prio:
                    best[f.sig] = f
        sig = min(cover, key=lambda s: (-len(set(cover[s])), best[s].prio))
        pairs = sorted(set(cover[sig]))
        todo -= set(pairs)
        by_key: dict[str, list[int]] = {}
        order = list(findings)
        for k, i in sorted(pairs, key=lambda p: (order.index(p[0]), p[1])):
            by_key.setdefault(k, []).append(i)
        groups: dict[str, list[str]] = {}
        for k, ids in by_key.items():
            groups.setdefault(where_words(ids, wrong[k], relevant[k], cases), []).append(k)
        f = best[sig]
        if f.kind == "scale" and f.detail == "c" and f.value is not None:  # a bare ratio: a symptom, not a cause
            for k, i in pairs:
                ratios.setdefault(k, []).append((next(g.value for g in findings[k][i] if g.sig == sig), i))
            continue
        shown = dict.fromkeys(f"{g.value:.4g}" for k, i in pairs for g in findings[k][i]
                              if g.sig == sig and g.value is not None)
        words = f.words.replace("{values}", ", ".join(list(shown)[:4]) + (" …" if len(shown) > 4 else ""))
        swaps = dict.fromkeys(checks.word(g.detail) for k, i in pairs for g in findings[k][i] if g.kind == "swapped")
        if f.kind != "swapped" and swaps:
            words = _swap_words(f, list(swaps))
        for where, keys in groups.items():
            subject = joined([checks.word(k) for k in keys])
            said = words.replace("is ", "are ", 1) if len(keys) > 1 and words.startswith("is ") else words
            if checks.base and keys[0] in checks.base(cases[0]):
                subject += ": the update" if len(keys) == 1 else ": the updates"
                said = said.replace("is ", "are ", 1) if len(keys) > 1 and said.startswith("is ") else said
            (vague if f.kind == "differs" and f.detail == "*" else sentences).append(f"{subject} {said} {where}")
        fix = hint_for(checks, next(iter(by_key)), f)
        if fix and fix not in fixes:
            fixes.append(fix)
    return sentences, fixes, vague, [_ratio_words(checks, k, sorted(cs, key=lambda p: p[1]), cases)
                                     for k, cs in ratios.items()]


def _swap_words(f: Finding, swaps: list[str]) -> str:
    """Two outputs whose expected values are related (∂/∂a = −∂/∂μ), each equal to the other's expected: said as
    the order first, a sign flip or scale (F) being what a swap of such outputs also looks like."""
    same = ("the same numbers as the sign flipped, since one expected is −1 × the other" if f.detail == "−1"
            else f"the same numbers as: {f.words.removeprefix('= ').removeprefix('is ')}")
    return (f"= the expected {joined([w.removeprefix('the ') for w in swaps])} (in that order): returned in "
            f"each other's place? Check the order you return them in ({same})")


def _ratio_words(checks: Checks, key: str, ratios: list[tuple[float, int]], cases: list[dict]) -> str:
    """Output KEY = c × the expected, with c named by nothing: on one input, or a different c on each (RATIOS:
    (c, input), in input order)."""
    if len(ratios) == 1:
        return f"{checks.word(key)} = {num(ratios[0][0])} × the expected on '{cases[ratios[0][1]]['label']}'"
    lo, hi = min(c for c, _ in ratios), max(c for c, _ in ratios)
    if num(lo) == num(hi):  # one factor everywhere, which no input quantity (B, N, …) equals
        return (f"{checks.word(key)} = {num(lo)} × the expected on all {len(ratios)} inputs it differs on: a constant "
                "factor that no size of the input explains (a number typed in, or a factor the formula does not have?)")
    return (f"{checks.word(key)} is a different multiple of the expected on each input ({num(lo)} to {num(hi)} × on "
            f"{len(ratios)} inputs): no one factor explains it")


def families(checks: Checks, cases: list[dict], passed: list[bool]) -> list[str]:
    """For each family of inputs that vary one thing: right for some members, wrong for others, in words."""
    out = []
    members: dict[str, list[int]] = {}
    for i, c in enumerate(cases):
        if c.get("family"):
            members.setdefault(c["family"], []).append(i)
    for fam, ids in members.items():
        good = [cases[i]["vary"] for i in ids if passed[i]]
        bad = [cases[i]["vary"] for i in ids if not passed[i]]
        if good and bad:
            text = f"right {' and '.join(dict.fromkeys(good))}, wrong {' and '.join(dict.fromkeys(bad))}"
            hint = checks.hints.get(("*", "family", f"{fam}:{good[0]}"), checks.hints.get(("*", "family", fam), ""))
            out.append(text + (f": {hint}" if hint else ""))
    return out


def locate(checks: Checks, cases: list[dict], outputs: list[dict], refs: list[dict], failing: list[int]) -> str:
    """The first input that fails, the first output wrong there, the first index where it differs."""
    for i in failing:
        for key, exp in refs[i].items():
            mine = outputs[i].get(key)
            if mine is None:
                continue
            for k, (a, b) in enumerate(zip(flat(mine), flat(exp), strict=False)):
                if a.shape != b.shape:
                    continue
                bad = ((a.double() - b.double()).abs() > MATCHES * max(1.0, float(b.double().abs().max()))) \
                    | (a.isfinite() != b.isfinite())
                if bad.any():
                    at = tuple(int(v) for v in bad.nonzero()[0])
                    part = f" (tensor {k})" if len(flat(exp)) > 1 else ""
                    return (f"the first difference is on the input '{cases[i]['label']}', {checks.word(key)}{part} "
                            f"at index {at}: yours {float(a[at]):.9g}, expected {float(b[at]):.9g}")
    return ""


def diagnose(checks: Checks, cases: list[dict], outputs: list[dict], refs: list[dict], passed: list[bool],
             bounds: list[float]) -> str:
    """What to tell the author of OUTPUTS (on CASES, where REFS is right; PASSED per input, against BOUNDS)."""
    lab = Lab(checks, cases)
    mine = [values(o) for o in outputs]
    refs = [values(r) for r in refs]
    failing = [i for i, p in enumerate(passed) if not p]
    for m in checks.mistakes:  # a known mistake, matched on every input
        if all((theirs := lab.out(m, i)) is not None and same(mine[i], theirs, MATCHES) for i in range(len(cases))):
            first = failing[0] if failing else 0
            return f"{m.name}: {m.tell(mine[first], refs[first])}"
    parts = []
    shape_text, bad_shape = shapes(checks, cases, mine, refs)
    if shape_text:
        parts.append(shape_text)
    dtype_text = dtypes(checks, cases, mine, refs, bad_shape)
    if dtype_text:
        parts.append(dtype_text)
    wrong = _wrong_outputs(checks, lab, mine, refs, bounds, bad_shape)
    sentences, fixes, vague, ratios = explain_outputs(checks, wrong.findings, wrong.inputs, wrong.relevant, cases)
    said = [words for words in (_experiment(e, cases, outputs, refs) for e in checks.experiments) if words]
    parts += sentences if sentences or said or ratios else vague  # "differs" alone only when nothing more is known
    if wrong.step_note:
        parts.append(wrong.step_note)
    right = [k for k in wrong.right if not any(k == checks.word(x) for x in wrong.later)]
    if right and (sentences or vague or shape_text or ratios):
        parts.append(f"{joined(right)} {'is' if len(right) == 1 else 'are'} right on every input")
    parts += families(checks, cases, passed)
    parts += said
    parts += fixes
    parts += ratios  # the bare ratios after what explains them
    where = locate(checks, cases, mine, refs, failing or list(range(len(cases))))
    if where:
        parts.append(where)
    text = "; ".join(parts) if parts else "your output differs from the expected one"
    return text if len(text) <= SHOWN else text[:SHOWN - 1] + "…"


@dataclass
class _Wrong:
    """The outputs that are wrong on some input, each measured: FINDINGS {output: {input: [Finding]}}, the INPUTS it
    is wrong on, the RELEVANT ones (that have it), the words of the outputs RIGHT on every input, the outputs of
    LATER updates (they follow from a wrong first one) and a STEP_NOTE that says so."""

    findings: dict[str, dict[int, list[Finding]]] = field(default_factory=dict)
    inputs: dict[str, list[int]] = field(default_factory=dict)
    relevant: dict[str, list[int]] = field(default_factory=dict)
    right: list[str] = field(default_factory=list)
    later: list[str] = field(default_factory=list)
    step_note: str = ""


def _wrong_outputs(checks: Checks, lab: Lab, mine: list[dict], refs: list[dict], bounds: list[float],
                   bad_shape: set) -> _Wrong:
    """Each output of the right shape, on each input it is wrong on, related to the expected (relate())."""
    cases, wrong = lab.cases, _Wrong()
    for key in refs[0]:
        if key in bad_shape or key in wrong.later:
            continue
        rel = [i for i in range(len(cases)) if key in refs[i] and key in mine[i]]
        bad = [i for i in rel if relative({key: mine[i][key]}, {key: refs[i][key]}) > bounds[i]]
        if not bad:
            wrong.right.append(checks.word(key))
            continue
        step = next((k for k, keys in enumerate(checks.steps) if key in keys), None)
        if step is not None and not wrong.later:
            wrong.later = [k for keys in checks.steps[step + 1:] for k in keys]
            if step > 0:
                wrong.step_note = (f"{joined([checks.word(k) for k in checks.steps[0]])} "
                                   f"{'is' if len(checks.steps[0]) == 1 else 'are'} right, a later update is not: "
                                   "what your function keeps or resets between calls (.grad, the optimizer's state) "
                                   "is wrong")
            elif wrong.later:
                wrong.step_note = "the later updates start from these and differ too (not diagnosed)"
        simple_cases = [i for i in bad if not cases[i].get("compound")]
        per = {i: relate(checks, lab, i, key, mine[i][key], refs[i][key], mine[i], refs[i])
               for i in simple_cases or bad}  # a trajectory (20 steps) is explained by its first step when one fails
        wrong.findings[key] = per
        wrong.inputs[key] = list(per)
        wrong.relevant[key] = [i for i in rel if not cases[i].get("compound")] if simple_cases else rel
    return wrong


def _experiment(experiment, cases: list[dict], mine: list[dict], refs: list[dict]) -> str | None:
    """What one of the exercise's experiments measures of the outputs; None where it does not apply."""
    try:
        return experiment(cases, mine, refs)
    except Exception:
        return None


# ---------------------------------------------------------------------------------------------------------------
# A submission that stopped, and a right one that is close but not exact
# ---------------------------------------------------------------------------------------------------------------

def _line(error: str) -> str:
    """The student's line that raised, as the sandbox's one-line error quotes it ("(line 7: z = x @ W)"), or ""."""
    found = re.search(r"\(line \d+: (.*?)\)(?:; the tensors on that line|$)", error)
    return found[1] if found else ""


def _sizes(error: str) -> str:
    """A size mismatch, measured: which dimension, and its size in each operand."""
    found = re.search(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton "
                      r"dimension (\d+)", error)
    said = (f"the operands' shapes do not broadcast: lined up from their last dimension, dimension {found[3]} of "
            f"the result is {found[1]} in one and {found[2]} in the other" if found
            else "two operands' shapes do not broadcast")
    code = _line(error)
    reduced = re.search(r"\b(sum|max|min|mean|logsumexp|norm|amax|amin|prod|argmax|argmin)\(([^()]*)\)", code)
    axis = re.search(r"(?:dim\s*=\s*|^\s*)(-?\d+)\s*$", reduced[2]) if reduced and reduced[2].strip() else None
    if axis and axis[1] == "0" and found:
        return (f"{said}; your line reduces over dim=0 ({reduced[1]}(…, dim=0)): with the batch first, that leaves "
                "one number per column where one per row (per sample) is expected: reduce over the other dimension")
    if reduced and axis and "keepdim" not in code:
        return (f"{said}; your line reduces with {reduced[1]}(…, dim) without keepdim=True, which drops that "
                f"dimension, so the result no longer lines up with the tensor it came from: keepdim=True keeps it "
                "(size 1)")
    column = _lost_column(error)
    if column:
        return f"{said}; {column}"
    return (f"{said}: the shapes of the tensors on your line are listed after it; compare each with the shapes the "
            "starter gives")


def _lost_column(error: str) -> str:
    """Two tensors on the student's line whose shapes are (N,) and (N, K), measured: the first lines up with the
    second's first dimension, but broadcasting lines shapes up from the last."""
    listed = re.search(r"; the tensors on that line: (.*)$", error)
    shapes = re.findall(r"(\w+) \(([\d, ]*)\)", listed[1]) if listed else []
    dims = [(name, tuple(int(v) for v in shape.replace(" ", "").split(",") if v)) for name, shape in shapes]
    for name, a in dims:
        for other, b in dims:
            if len(a) == len(b) + 1 and a[:-1] == b and a[-1] == b[-1] and len(b) >= 1:
                return (f"{name} {a} has one dimension more than {other} {b}, its last of the same size: an (N, 1) "
                        "broadcast against an (N,) made it upstream, an (N, N) where N numbers belong: squeeze the "
                        "(N, 1) where it is made (a network's (…, 1) output: .squeeze(-1))")
            if len(a) == 1 and len(b) == 2 and a[0] == b[0] and b[1] != a[0]:
                return (f"{name} {a} holds one number per row of {other} {b}, but broadcasting lines shapes up "
                        f"from the last dimension: make it a column, {name}[:, None] (keepdim=True where a reduction "
                        "made it)")
    return ""


def _matmul(error: str) -> str:
    """A matrix product whose inner sizes differ, measured: the two shapes, and which operand transposed fits."""
    vec = re.search(r"mat \((\d+)x(\d+)\), vec \((\d+)\)", error)
    if vec:
        a, b, c = vec.groups()
        said = f"a matrix-vector product ({a}×{b}) @ ({c},): the matrix has {b} columns, the vector {c} entries"
        return (f"{said}; the matrix transposed, ({b}×{a}), would fit: is it the transpose of what you meant "
                f"(v @ J is Σ_i v_i J[i])?" if a == c else f"{said}: compare each with the shapes the starter gives")
    found = re.search(r"\((\d+)x(\d+) and (\d+)x(\d+)\)", error)
    if not found:
        return "a matrix product whose inner sizes differ: the columns of the first must equal the rows of the second"
    a, b, c, d = found.groups()
    said = f"a matrix product ({a}×{b}) @ ({c}×{d}): the inner sizes {b} and {c} differ"
    if b == d:
        return f"{said}; the second operand transposed, ({d}×{c}), would fit: is it the transpose of what you meant?"
    if a == c:
        return f"{said}; the first operand transposed, ({b}×{a}), would fit: is it the transpose of what you meant?"
    return f"{said}: compare each operand's shape with the shapes the starter gives"


def _dtypes(error: str) -> str:
    found = re.search(r"(?:got:?|found|type) (\w+)(?: (?:!=|and|but found)|,) (\w+)", error)
    which = f" ({found[1]} and {found[2]})" if found else ""
    return (f"two tensors of different dtypes{which} met in one operation, which PyTorch does not convert for you: "
            "keep the dtype the inputs arrive with (no .double(), .float() or torch.tensor(…) of your own without "
            "dtype=x.dtype); the dtype of each tensor on your line is listed after it")


ERRORS = [  # (text in PyTorch's message, what it means and the fix: a sentence, or one made from the message)
    ("a view of a leaf Variable that requires grad is being used in an in-place operation",
     "an in-place update of part of a tensor that requires grad (W[0] -= …, x[i] = …): autograd forbids it on a "
     "leaf. Build a new tensor (torch.where, torch.cat, or a clone() you change) instead"),
    ("a leaf Variable that requires grad is being used in an in-place operation",
     "an in-place update (W -= …, W.sub_(…)) of a tensor that requires grad: autograd forbids it on a leaf. Return "
     "new tensors instead (W - lr * gW), leaving the caller's W as it is"),
    ("modified by an inplace operation",
     "a tensor autograd saved for the backward pass (to compute a derivative) was changed in place after it was "
     "saved (+=, mul_, x[i] = …, a ReLU(inplace=True)): the backward needs the value it had. Make that change out of "
     "place (x = x * 2, not x.mul_(2)), or change a clone()"),
    ("does not require grad and does not have a grad_fn",
     "autograd was asked for a gradient of something with no graph: make the input a leaf that requires grad "
     "first (x = x.detach().requires_grad_(True)), and do not cut what the gradient must flow through (.data, "
     ".detach(), .item(), torch.no_grad(), torch.tensor(…) of a tensor)"),
    ("appears to not have been used in the graph",
     "a tensor you ask the gradient for is not in the graph of what you differentiate: the output was computed "
     "from another tensor (a copy made with .data, .detach() or .clone(), or a name rebound after requires_grad_)"),
    ("Trying to backward through the graph a second time",
     "the graph is freed after the first backward/autograd.grad: pass retain_graph=True to every call but the "
     "last, or rebuild the graph (call f again) before each"),
    ("grad can be implicitly created only for scalar outputs",
     ".backward() with no argument needs a 0-dim tensor: reduce the loss to one number as the formula says, or pass "
     "the upstream gradient (y.backward(v), autograd.grad(y, x, grad_outputs=v))"),
    ("must match the size of tensor", _sizes),
    ("cannot be multiplied", _matmul),
    ("size mismatch, got input", _matmul),
    ("Mismatch in shape: grad_output",
     "grad_outputs must have the shape of the output it weighs (f(x)'s shape), not the input's"),
    ("to have the same dtype", _dtypes),
    ("must have the same dtype", _dtypes),
    ("to have same dtype", _dtypes),
    ("expected scalar type", _dtypes),
    ("requires the source and destination dtypes match", _dtypes),
    ("expected target dtype to be Long",
     "F.cross_entropy's target is class numbers of dtype int64 (y.long(), or y.argmax(dim=1) from one-hot rows), or "
     "class probabilities of the input's dtype and shape"),
    ("tensors used as indices must be long",
     "an index tensor of floats: indices must be integers (int64: .long()) or booleans"),
    ("Found no NVIDIA driver",
     "your code moves a tensor to a GPU (.cuda(), device='cuda'): the check runs on the CPU; keep every tensor on "
     "the device it arrives on (torch.zeros(…, device=x.device))"),
    ("is not on the expected device",
     "tensors on two devices met in one operation: create your tensors on the device of the inputs "
     "(device=x.device)"),
    ("Can't call numpy() on Tensor that requires grad",
     "NumPy of a tensor in the graph: autograd cannot follow a computation through NumPy. Keep it in torch "
     "operations"),
    ("Boolean value of Tensor with more than one value is ambiguous",
     "if, while, and, or or Python's max() on a tensor of several numbers: use elementwise torch operations "
     "(torch.where, torch.maximum, torch.clamp) or reduce first (.any(), .all())"),
    ("only one element tensors can be converted to Python scalars",
     "float() or a Python number of a tensor holding several numbers: keep it a tensor (or reduce it first)"),
    ("cannot be converted to Scalar",
     ".item() of a tensor holding several numbers: keep it a tensor (or reduce it first)"),
    ("is invalid for input of size",
     "a reshape or view to a shape that does not hold the tensor's number of elements: compare the sizes"),
    ("Dimension out of range",
     "a dim= past the tensor's dimensions (the tensors on your line are listed after it, with their shapes)"),
    ("out of bounds",
     "an index past the end of a dimension (the tensors on your line are listed after it, with their shapes)"),
    ("could not infer output dtype",
     "a mean (or another floating operation) of an integer tensor: convert it to the inputs' floating dtype first "
     "(.to(x.dtype))"),
    ("can't be cast to the desired output type",
     "an in-place operation writes floats into an integer tensor: compute a new tensor (out of place), or convert "
     "to a floating dtype first"),
    ("stack expects each tensor to be equal size",
     "torch.stack of tensors of different shapes: each must have the same shape (torch.cat joins along an existing "
     "dimension)"),
    ("stack expects a non-empty TensorList",
     "torch.stack of an empty list: the loop that fills it never ran on this input (its range is empty here: "
     "compare it with the sizes of this input)"),
    ("1D tensors expected", "torch.dot takes two 1-D tensors: use @ (torch.matmul) for matrices"),
    ("attempting to assign a gradient",
     "p.grad = g with g of another shape or dtype than p: give each parameter the gradient of its own shape and "
     "dtype, in the order of its parameters()"),
    ("returned an incorrect number of gradients",
     "backward returns one gradient per input of forward (after ctx), in the same order: None for an input that "
     "needs none"),
    ("returned an invalid gradient",
     "a gradient backward returns has the wrong shape: each must have the shape of its input to forward (dy times "
     "the local derivative, elementwise, keeps it)"),
    ("save_for_backward can only save variables",
     "ctx.save_for_backward takes tensors only: keep a number on ctx as an attribute (ctx.k = k)"),
    ("you can only change requires_grad flags of leaf variables",
     "requires_grad_ on a computed tensor: call it on the input first (x = x.detach().requires_grad_(True)), then "
     "compute from x"),
    ("only Tensors of floating point dtype can require gradients",
     "requires_grad on an integer tensor: gradients exist for floating dtypes only; convert first (.to(x.dtype))"),
]


def explain_error(checks: Checks, error: str) -> str:
    """The fix for an exception the submission raised, when its message is one students meet: the exercise's own
    advice first, then the general one (from the message's measured sizes and dtypes and the student's line)."""
    for pattern, fix in [*checks.errors, *ERRORS]:
        if pattern in error:
            return fix(error) if callable(fix) else fix
    return ""


def accepted(checks: Checks, cases: list[dict], outputs: list[dict], refs: list[dict], diffs: list[float]) -> str:
    """For a passing answer that differs by more than rounding: by how much, and why, when it is a known correct
    variant (F.softplus's threshold, clip_grad_norm_'s + 1e-6)."""
    def rounding(ref: dict) -> float:  # a few ulps of the reference's precision
        return 8 * max(torch.finfo(t.dtype).eps for t in flat(values(ref)) if t.is_floating_point())

    above = [i for i in range(len(cases)) if diffs[i] > rounding(refs[i])]
    if not above:
        return ""
    worst = max(above, key=lambda i: diffs[i])
    lab = Lab(checks, cases)
    for v in checks.variants:
        theirs = [lab.out(v, i) for i in above]
        if all(t is not None for t in theirs) and all(
                relative(values(outputs[i]), t) <= max(diffs[i] / 10, rounding(refs[i]))
                for i, t in zip(above, theirs, strict=True)):
            return (f"your answer is not exact: it differs from the reference by up to {diffs[worst]:.2g} "
                    f"({DIFFERENCE}, on '{cases[worst]['label']}'), which is {v.what}; within the bound, accepted")
    return ""


def changed_inputs(exercise, outputs: list[dict]) -> list[str]:
    """The inputs the function changed in place on some input (the harness reports one 0/1 per input)."""
    hit = [False] * len(exercise.keeps)
    for o in outputs:
        flags = o.get(CHANGED)
        if flags is not None:
            hit = [h or bool(f) for h, f in zip(hit, flags.tolist(), strict=False)]
    return [name for name, h in zip(exercise.keeps, hit, strict=True) if h]
