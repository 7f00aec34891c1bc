"""Judging what a submission's sandbox returned: a row per input against the reference, a claim per kind of input and
per rule, and, when one fails, the diagnosis (gradlab/practice/judging/diagnosis.py, which imports torch: it is imported
when a submission's outputs are judged, so that a syntax error is reported without torch)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gradlab.kit.exercise import DIFFERENCE, GRAPH, Checks, Exercise, relative, values
from gradlab.kit.result import Claim, Column, Result, Table
from gradlab.practice import checks_of
from gradlab.practice.sandbox.returned import Received


@dataclass(frozen=True)
class Reference:
    """What a submission of an exercise is judged against, computed in gradlab's process, never the submission's:
    the exercise's CHECKS, its generated inputs for one seed (CASES) and the reference's OUTPUTS on them."""

    checks: Checks
    cases: list[dict]
    outputs: list[dict]


def judge(exercise: Exercise, reference: Reference | None, got: Received, seed: int = 0) -> Result:
    """The Result of a submission whose sandbox returned GOT (its outputs, or how it stopped, with what it printed),
    judged against REFERENCE. A submission that stopped needs none: its
    checks are all there, not reached."""
    result = Result(lesson="check", title=f"{exercise.name}: {exercise.what}", config={}, seed=seed,
                    metrics={"exercise": exercise.name}, claims=[], notes=[])
    student_output(result, got)
    if got.ok:
        _compare(exercise, reference, got.outputs, result)
    else:
        _not_reached(exercise, reference, got, result)
    own_code(exercise, got, result)
    return result


def _not_reached(exercise: Exercise, reference: Reference | None, got: Received, result: Result) -> None:
    """Every check there, not reached (NaN fails): a course's points add up the same way as for an answer that ran;
    an exception students often meet gets its fix."""
    result.stopped = returned(got.error)
    result.metrics["trace"] = got.trace
    result.claims = [Claim.not_reached(f"{exercise.name}:{kind}", text, bound)
                     for kind, (text, bound) in exercise.claims.items()]
    result.claims += [Claim.not_reached(f"{exercise.name}:extra{i}", text, bound, op)
                      for i, (text, bound, op) in enumerate(exercise.all_rules())]
    if got.kind == "raised":
        from gradlab.practice.judging import diagnosis

        fix = diagnosis.explain_error(reference.checks if reference else checks_of(exercise), got.error)
        if fix:
            result.metrics["diagnosis"] = fix


@dataclass(frozen=True)
class _Comparison:
    """The submission's outputs against the reference's, input by input."""

    diffs: list[float]  # DIFFERENCE on each input
    bounds: list[float]  # what each input's kind of check allows
    passed: list[bool]


def _compare(exercise: Exercise, reference: Reference, outputs: list[dict], result: Result) -> None:
    """The table of inputs, a claim per kind of input and per rule; the diagnosis when one fails, else a note on an
    answer that is right but not exact."""
    from gradlab.practice.judging import diagnosis

    cases = reference.cases
    diffs = [relative(values(o), values(r)) for o, r in zip(outputs, reference.outputs, strict=True)]
    bounds = [exercise.claims[c["kind"]][1] for c in cases]
    comparison = _Comparison(diffs, bounds, [d <= b for d, b in zip(diffs, bounds, strict=True)])
    rows = [[c["label"], c["kind"], d, "✓" if p else "✗"] for c, d, p in zip(cases, diffs, comparison.passed,
                                                                             strict=True)]
    result.tables.append(Table(f"your {exercise.function}() against the reference, input by input (difference: "
                               f"{DIFFERENCE})",
                               [Column(header="input"), Column(header="checks"),
                                Column(header="difference", format=".3g"), Column(header="")], rows))
    for kind, (text, bound) in exercise.claims.items():
        worst = max(d for c, d in zip(cases, diffs, strict=True) if c["kind"] == kind)
        result.claims.append(Claim(f"{exercise.name}:{kind}", text, worst, bound))
    measured = list(reference.checks.extra(outputs, cases))
    changed = diagnosis.changed_inputs(exercise, outputs)
    if exercise.keeps:
        measured.append(len(changed))
    if exercise.no_autograd:
        measured.append(max(float(o.get(GRAPH, 0)) for o in outputs))
    result.claims += [Claim(f"{exercise.name}:extra{i}", text, value, bound, op)
                      for i, ((text, bound, op), value) in enumerate(zip(exercise.all_rules(), measured, strict=True))]
    if all(c.passed for c in result.claims):
        note = diagnosis.accepted(reference.checks, cases, outputs, reference.outputs, diffs)
        if note:
            result.notes.append(note)
    else:
        result.metrics["diagnosis"] = _why_wrong(exercise, reference, outputs, comparison, changed=changed,
                                                 graph=measured[-1] if exercise.no_autograd else 0,
                                                 claims=result.claims)


def _why_wrong(exercise: Exercise, reference: Reference, outputs: list[dict], comparison: _Comparison, *,
               changed: list[str], graph: float, claims: list[Claim]) -> str:
    """What to tell the author of a failing answer: a broken rule when the values are right (an input CHANGED in
    place, an exercise's own rule, an autograd GRAPH built), else what the diagnosis finds in the values."""
    from gradlab.practice.judging import diagnosis

    if all(comparison.passed) and changed:
        return (f"your values are right, but your function changed {', '.join(changed)} in place (an in-place "
                f"operation: -=, mul_, copy_…) where the exercise says {'they are' if len(changed) > 1 else 'it is'}"
                " not changed: compute new tensors (e.g. W - lr * gW rather than W -= lr * gW) and return those")
    own_rules = claims[len(exercise.claims):len(exercise.claims) + len(exercise.rules)]
    if all(comparison.passed) and any(not c.passed for c in own_rules):
        hints = reference.checks.rule_hints
        return "your values are right, but: " + "; ".join(
            hints[i] if i < len(hints) else exercise.rules[i][0] for i, c in enumerate(own_rules) if not c.passed)
    if all(comparison.passed) and graph > 0:
        return ("your values are right, but your function built an autograd graph (requires_grad_, "
                "torch.autograd.grad or .backward): this exercise asks for the gradient from the formula alone, "
                "with tensor operations on inputs that do not require grad")
    return diagnosis.diagnose(reference.checks, reference.cases, outputs, reference.outputs, comparison.passed,
                              comparison.bounds)


def returned(error: str) -> str:
    """A harness's Returned (the function returned the wrong kind of thing) said as such, not as an exception the
    function raised (a sandbox that reports every exception as "raised" gives 'f() raised on the input …: Returned:
    …')."""
    found = re.match(r"(\w+)\(\) raised on the input '(.*?)': Returned: (.*)$", error, re.S)
    return f"{found[1]}() returned on the input '{found[2]}': {found[3]}" if found else error


PRINTED_LINES = 20  # the last lines of what the submission printed that a check shows


def student_output(result: Result, got: Received) -> None:
    """What the submission printed (its last lines, with the total size) and the warnings it raised, on the Result:
    the report shows them under the checks, --json writes them (metrics printed, printed_bytes, warnings)."""
    printed = got.printed
    if printed.strip():
        lines = printed.rstrip("\n").splitlines()
        tail = "\n".join(lines[-PRINTED_LINES:])[-2000:]
        result.metrics["printed"] = tail
        result.metrics["printed_bytes"] = got.printed_bytes or len(printed.encode())
        result.metrics["printed_lines"] = len(lines)
    warnings = list(got.warnings)
    if warnings:  # at most 10, each cut to 300 characters
        result.metrics["warnings"] = [w if len(w) <= 300 else w[:299] + "…" for w in warnings[:10]]


def own_code(exercise: Exercise, got: Received, result: Result) -> None:
    """The check of an exercise that asks students to write what a library already does (Exercise.forbidden): a call
    to one of those, noted in the sandbox, fails it, and says which ("uses torch.nn.utils.clip_grad_norm_, which
    this exercise asks you to write"). Not reached when the submission stopped."""
    if not exercise.forbidden:
        return
    used = list(got.used)
    shown = [n for n in exercise.forbidden if not n.startswith(("torch.ops.", "torch._"))] or exercise.forbidden
    one = len(shown) == 1  # torch's private aliases and aten ops of those (forbidden too) are not listed
    text = (f"your code {'does not use' if one else 'uses none of'} {', '.join(shown)} (the exercise "
            f"is to write what {'it does' if one else 'they do'})")
    result.claims.append(Claim(f"{exercise.name}:own", text, float(len(used)), 0) if got.ok
                         else Claim.not_reached(f"{exercise.name}:own", text, 0))
    if used:
        why = f"uses {', '.join(used)}, which this exercise asks you to write"
        result.metrics["own_code"] = why
        if "diagnosis" in result.metrics:
            result.notes.append(why)
        else:
            result.metrics["diagnosis"] = why
