"""The findings in words: the relations that explain the most (output, input) pairs, said once each for the outputs
they hold on; the families of inputs a submission is right on and wrong on; the first input, output and index where
it differs."""

from __future__ import annotations

import re
from typing import Any

from gradlab.kit.exercise import Checks, num
from gradlab.kit.measure import MATCHES, flat


def hint_for(checks: Checks, key: str, f: Any) -> str:
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


def explain_outputs(checks: Checks, findings: dict[str, dict[int, list[Any]]], wrong: dict[str, list[int]],
                    relevant: dict[str, list[int]], cases: list[dict]
                    ) -> tuple[list[str], list[str], list[str], list[str]]:
    """(sentences, fixes, vague ones: "differs" with nothing more, ratios: a factor no quantity names, said after
    the causes and once per output): the relations that explain the most (output, input) pairs, chosen greedily,
    each said once for the outputs it holds on (W and b: the updates are 1/K × the expected update on every
    input)."""
    # every (output, input) pair in one order: the outputs as the reference returns them, the inputs in the
    # exercise's order; every walk below follows it (never a set's order, which a string's hash, PYTHONHASHSEED, sets)
    order = [(k, i) for k, per in findings.items() for i in sorted(per)]
    todo = set(order)
    sentences, fixes, vague = [], [], []
    ratios: dict[str, list[tuple[float, int]]] = {}
    while todo:
        cover: dict[Any, list[tuple[str, int]]] = {}
        best: dict[Any, Any] = {}
        for (k, i) in (p for p in order if p in todo):
            for f in findings[k][i]:
                if (k, i) not in cover.setdefault(f.sig, []):
                    cover[f.sig].append((k, i))
                if f.sig not in best or f.prio < best[f.sig].prio:  # a tie: the first output's first input's words
                    best[f.sig] = f
        sig = min(cover, key=lambda s: (-len(cover[s]), best[s].prio))  # a tie: the relation found first in order
        pairs = cover[sig]
        todo -= set(pairs)
        by_key: dict[str, list[int]] = {}
        for k, i in pairs:
            by_key.setdefault(k, []).append(i)
        f = best[sig]
        if f.kind == "scale" and f.detail == "c" and f.value is not None:  # a bare ratio: a symptom, not a cause
            for k, i in pairs:
                ratios.setdefault(k, []).append((next(g.value for g in findings[k][i] if g.sig == sig), i))
            continue
        shown = dict.fromkeys(f"{g.value:.4g}" for k, i in pairs for g in findings[k][i]
                              if g.sig == sig and g.value is not None)
        words = f.words.replace("{values}", ", ".join(list(shown)[:4]) + (" …" if len(shown) > 4 else ""))
        if "{most}" in words:  # "by at most": the largest over every input it is said for, not the first one's
            most = max(g.value for k, i in pairs for g in findings[k][i] if g.sig == sig)
            words = words.replace("{most}", f"{most:.2g}")
        swaps = dict.fromkeys(checks.word(g.detail) for k, i in pairs for g in findings[k][i] if g.kind == "swapped")
        if f.kind != "swapped" and swaps:
            words = _swap_words(f, list(swaps))
        own = "{" not in f.words and not (f.kind != "swapped" and swaps)  # each output in its own finding's words
        groups: dict[tuple[str, str], list[str]] = {}  # one relation (0, NaN) of an update and of an output, counts
        for k, ids in by_key.items():
            said = next(g.words for g in findings[k][ids[0]] if g.sig == sig) if own else words
            groups.setdefault((where_words(ids, wrong[k], relevant[k], cases), said), []).append(k)
        for (where, words), keys in groups.items():
            subject = joined([checks.word(k) for k in keys])
            said = words.replace("is ", "are ", 1) if len(keys) > 1 and words.startswith("is ") else words
            if checks.base and keys[0] in checks.base(cases[0]) and not said.startswith("did not move"):
                subject += ": the update" if len(keys) == 1 else ": the updates"
                said = said.replace("is ", "are ", 1) if len(keys) > 1 and said.startswith("is ") else said
            (vague if f.kind == "differs" and f.detail == "*" else sentences).append(f"{subject} {said} {where}")
        fix = hint_for(checks, next(iter(by_key)), f)
        if fix and fix not in fixes:
            fixes.append(fix)
    return sentences, fixes, vague, [_ratio_words(checks, k, sorted(cs, key=lambda p: p[1]), cases)
                                     for k, cs in ratios.items()]


def _swap_words(f: Any, swaps: list[str]) -> str:
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


_SEPARATORS = ("; ", ": ", ". ")
_PRONOUN = re.compile(r"^(?:it|this|that|they) ")


def said_once(text: str) -> str:
    """TEXT with each clause said once (#45: a family's words and a hint's, a cause's fix and a relation's hint, often
    say the same). Clauses are what lies between '; ', ': ' and '. ' outside brackets; a clause of three words or more
    is left out, with the separator before it, when a clause said before contains it, or when it is a subject (at most
    three words) put before a clause said before ("(1 − done_t) cuts only the bootstrap" after "it cuts only the
    bootstrap"). Compared without case and without the brackets that follow a name (softmax(z) reads softmax)."""
    pieces, said, out = _clauses(text), [], []
    for sep, clause in pieces:
        key = _key(clause)
        words = key.split()
        if len(words) >= 3 and any(_within(key, s) or _subject_put_before(words, s) for s in said):
            continue
        said.append(key)
        out.append((sep if out else "") + clause)
    return "".join(out)


def _clauses(text: str) -> list[tuple[str, str]]:
    """TEXT cut at its separators outside brackets and `quoted code` (a student's line is never cut):
    [(the separator before, the clause)]."""
    pieces, depth, start, sep, i, code = [], 0, 0, "", 0, False
    while i < len(text):
        ch = text[i]
        code ^= ch == "`"
        depth += (ch in "([{") - (ch in ")]}")
        hit = next((s for s in _SEPARATORS if depth == 0 and not code and text.startswith(s, i)), None)
        if hit:
            pieces.append((sep, text[start:i]))
            sep, start = hit, i + len(hit)
            i += len(hit)
            continue
        i += 1
    pieces.append((sep, text[start:]))
    return pieces


def _key(clause: str) -> str:
    plain = re.sub(r"(?<=\w)\([^()]*\)", "", clause.lower())
    return _PRONOUN.sub("", " ".join(plain.split()).strip(" ,."))


def _within(key: str, before: str) -> bool:
    return f" {key} " in f" {before} "


def _subject_put_before(words: list[str], before: str) -> bool:
    told = before.split()
    return len(told) >= 3 and len(words) - len(told) in (1, 2, 3) and words[-len(told):] == told
