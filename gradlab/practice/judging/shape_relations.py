"""Shapes and dtypes first, every output at once: which output has the wrong shape, and why when it can be told (the
transpose, a mean over the batch, an (N, N) broadcast, the first rows of the expected)."""

from __future__ import annotations

import itertools

import torch

from gradlab.kit.exercise import Checks, values
from gradlab.kit.measure import RELATE, close, flat


def shape_relation(a: torch.Tensor, b: torch.Tensor, case: dict | None = None) -> str:
    """Why a has the wrong shape, when it can be told: the transpose, a mean or sum, an (N, N) broadcast, the other
    axis of an input (CASE: the input it was measured on)."""
    if a.dim() == 2 and b.dim() == 2 and a.shape == b.shape[::-1]:
        return ": the transpose of the expected" if close(a.T.double(), b.double()) else ": transposed?"
    if a.numel() == 1 and b.numel() > 1:
        for how, v in (("the mean", b.double().mean()), ("the sum", b.double().sum())):
            if abs(float(a) - float(v)) <= RELATE * max(abs(float(v)), 1e-12):
                return f": {how} of the expected over all its entries (keep one per element)"
        return ": one number where one per element is expected (a mean or sum too many?)"
    if b.dim() == 1 and a.dim() == 2 and a.shape == (b.shape[0], b.shape[0]):
        return _square(a, b, case or {})
    if a.dim() == b.dim() + 1 and a.shape[-1] == 1 and a.shape[:-1] == b.shape:
        return ": an extra dimension of size 1 (squeeze it)"
    if a.dim() == b.dim() and a.dim() >= 1 and a.shape[1:] == b.shape[1:] and 0 < a.shape[0] < b.shape[0] \
            and close(a.double(), b[:a.shape[0]].double()):
        return _first_rows(a.shape[0], b.shape[0])
    if a.numel() == b.numel() and a.dim() == b.dim() and sorted(a.shape) == sorted(b.shape):
        for perm in itertools.permutations(range(b.dim())):
            if tuple(b.shape[p] for p in perm) == tuple(a.shape) and close(a.double(), b.permute(perm).double()):
                return (f": the expected with its dimensions in another order (yours = expected.permute{perm}): "
                        "stacked or transposed along another dimension")
    if a.numel() == b.numel():
        return ": the right number of entries in another shape (a reshape or a view?)"
    return _other_axis(a, b, case or {})


def _first_rows(k: int, n: int) -> str:
    """The first K rows of the expected N, each right: which way the loop stopped early, told by K where it can be (a
    return inside the loop leaves one row; a range one short leaves N − 1)."""
    how = ("early: a return inside the loop, or a range that ends too soon (with two rows the count cannot tell "
           "which)" if n == 2
           else "after its first pass: a return inside the loop" if k == 1
           else "one pass short: a range that ends one too soon" if k == n - 1
           else "early: a range that ends too soon")
    rows = "the first row" if k == 1 else f"the first {k} rows"
    return f": {rows} of the expected {n}, each right (the loop stopped {how})"


def _square(a: torch.Tensor, b: torch.Tensor, case: dict) -> str:
    """An (N, N) matrix where N numbers are expected, measured: its diagonal is the expected (an (N, 1) term broadcast
    against (N,) ones pairs every row with every column, and the right pairs lie on the diagonal), or its product
    with a vector of the input CASE is (the whole matrix where its product with that vector is asked)."""
    if close(a.diagonal().double(), b.double()):
        return (": an (N, N) matrix whose diagonal is the expected (measured): yours[i, j] pairs row i of a term of "
                "shape (N, 1) with column j of the terms of shape (N,), broadcast against each other; keep every term "
                "(N,) (.squeeze(1) the (N, 1) one, or reduce without keepdim=True)")
    for name, v in case.items():
        if isinstance(v, torch.Tensor) and v.shape == b.shape and v.is_floating_point() \
                and close((a.double() @ v.double()), b.double()):
            return (f": the whole (N, N) matrix, whose product with {name} is the expected (measured): return the "
                    f"product, never the matrix")
    return (": an (N, N) matrix where N numbers are expected (measured: neither its diagonal nor its product with a "
            "vector of the input is the expected)")


def _other_axis(a: torch.Tensor, b: torch.Tensor, case: dict) -> str:
    """A 1-D output whose length is one dimension of a 2-D input of CASE where the expected's length is the other
    (B where K, of a (B, K) input), measured: what a reduction over the other dimension leaves."""
    if a.dim() != 1 or b.dim() != 1 or a.shape == b.shape:
        return ""
    for name, x in case.items():
        if isinstance(x, torch.Tensor) and x.dim() == 2 and x.shape[0] != x.shape[1]:
            for d in (0, 1):
                if x.shape[d] == a.shape[0] and x.shape[1 - d] == b.shape[0]:
                    return (f": ({a.shape[0]},) is the size of dimension {d} of the input {name} {tuple(x.shape)}, "
                            f"({b.shape[0]},) that of its dimension {1 - d}: one number per "
                            f"{'row' if d == 0 else 'column'} where one per {'column' if d == 0 else 'row'} is "
                            f"expected, what a reduction over the other dimension leaves (dim={1 - d} where dim={d} "
                            "belongs)")
    return ""


def shapes(checks: Checks, cases: list[dict], outputs: list[dict], refs: list[dict]) -> tuple[str, set]:
    """One sentence on every output whose shape (or number of tensors) is wrong on some input, with the exercise's
    hint for it ((key, "shape", "*") or ("*", "shape", "*")), and those keys."""
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
                             f"expected on '{cases[i]['label']}'{shape_relation(*bad, cases[i])}")
                hint = checks.hints.get((key, "shape", "*")) or checks.hints.get(("*", "shape", "*"))
                words += [hint] if hint else []  # the exercise's words for it (a Suspects: its causes, decided)
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
