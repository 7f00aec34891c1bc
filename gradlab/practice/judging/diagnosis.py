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

This module puts the sentence together; each concern is a module beside it: value_relations.py (one output on one
input, related to the expected), shape_relations.py (shapes and dtypes first), sentences.py (the findings in words,
the families, the locator), exception_advice.py (an exception's fix); gradlab/kit/measure.py compares tensors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from gradlab.kit.exercise import CHANGED, DIFFERENCE, Checks, difference, same, values
from gradlab.kit.measure import MATCHES, flat
from gradlab.practice.judging.sentences import explain_outputs, families, joined, locate
from gradlab.practice.judging.shape_relations import dtypes, shapes
from gradlab.practice.judging.suspects import decided
from gradlab.practice.judging.value_relations import Finding, Lab, relate

SHOWN = 1500  # characters of diagnosis at most


def diagnose(checks: Checks, cases: list[dict], outputs: list[dict], refs: list[dict], passed: list[bool],
             bounds: list[float], nonfinite: dict | None = None) -> str:
    """What to tell the author of OUTPUTS (on CASES, where REFS is right; PASSED per input, against BOUNDS;
    NONFINITE: the sandbox's {"input", "line"} where the first NaN or inf of the student's appeared)."""
    lab = Lab(checks, cases)
    mine = [values(o) for o in outputs]
    refs = [values(r) for r in refs]
    failing = [i for i, p in enumerate(passed) if not p]
    for m in checks.mistakes:  # a known mistake, matched on every input
        if all((theirs := lab.out(m, i)) is not None and same(mine[i], theirs, MATCHES) for i in range(len(cases))):
            first = failing[0] if failing else 0
            departs = first_nonfinite(cases, mine, refs, nonfinite)
            return f"{m.name}: {m.tell(mine[first], refs[first])}" + (f"; {departs}" if departs else "")
    checks = decided(checks, lab, mine)  # a hint's causes: each said only where an experiment confirms it
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
    parts += [departs] if (departs := first_nonfinite(cases, mine, refs, nonfinite)) else []
    if wrong.step_note:
        parts.append(wrong.step_note)
    right = [k for k in wrong.right if not any(k == checks.word(x) for x in wrong.later)]
    if right and (sentences or vague or shape_text or ratios):
        parts.append(f"{joined(right)} {'is' if len(right) == 1 else 'are'} right on every input")
    parts += families(checks, cases, passed)
    parts += said
    parts += [fix for fix in fixes if not any(fix in p for p in parts)]  # a confirmed cause may have said it
    parts += ratios  # the bare ratios after what explains them
    where = locate(checks, cases, mine, refs, failing or list(range(len(cases))))
    if where:
        parts.append(where)
    text = "; ".join(parts) if parts else "your output differs from the expected one"
    return text if len(text) <= SHOWN else text[:SHOWN - 1] + "…"


def first_nonfinite(cases: list[dict], mine: list[dict], refs: list[dict], nonfinite: dict | None) -> str:
    """The student's line where the first NaN or inf appeared on an input (the sandbox ran it again and watched every
    torch operation called from the student's file, and the backward), said when the student's output there is NaN
    or inf where the expected is finite."""
    i = (nonfinite or {}).get("input")
    if not isinstance(i, int) or not 0 <= i < len(cases) or not nonfinite.get("line"):
        return ""
    for key, exp in refs[i].items():
        for a, b in zip(flat(mine[i].get(key, [])), flat(exp), strict=False):
            if a.shape == b.shape and a.is_floating_point() and bool((~a.isfinite() & b.isfinite()).any()):
                return (f"where the first NaN or inf appears (measured: '{cases[i]['label']}' run again, each torch "
                        f"operation of your file watched): your line {nonfinite['line']}")
    return ""


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
        bad = [i for i in rel if difference({key: mine[i][key]}, {key: refs[i][key]}) > bounds[i]]
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
                difference(values(outputs[i]), t) <= max(diffs[i] / 10, rounding(refs[i]))
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
