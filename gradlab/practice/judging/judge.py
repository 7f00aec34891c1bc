"""Judging what a submission's sandbox returned: a row per input against the reference, a claim per kind of input and
per rule, and, when one fails, the diagnosis (gradlab/practice/judging/diagnosis.py, which imports torch: it is imported
when a submission's outputs are judged, so that a syntax error is reported without torch)."""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from gradlab.kit.exercise import DIFFERENCE, GRAPH, Checks, Exercise, difference, values
from gradlab.kit.result import Claim, Column, Result, Table
from gradlab.practice import checks_of
from gradlab.practice.judging import points
from gradlab.practice.sandbox.returned import Received
from gradlab.version import __version__


@dataclass(frozen=True)
class Reference:
    """What a submission of an exercise is judged against, computed in gradlab's process, never the submission's:
    the exercise's CHECKS, its generated inputs for one seed (CASES) and the reference's OUTPUTS on them."""

    checks: Checks
    cases: list[dict]
    outputs: list[dict]


@dataclass
class _Verdict:
    """What judging finds, gathered before the Result is made from it (once, complete: judge())."""

    metrics: dict
    claims: list[Claim] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stopped: str | None = None
    accepted: str = ""  # a right answer that is not exact: why it is accepted (said only if every check passes)


def judge(exercise: Exercise, reference: Reference | None, got: Received, seed: int = 0, *, file: str = "",
          environment: str = "") -> Result:
    """The Result of a submission whose sandbox returned GOT (its outputs, or how it stopped, with what it printed),
    judged against REFERENCE; FILE: the name the student knows it by. A submission that stopped needs none: its
    checks are all there, not reached. ENVIRONMENT: why the machine, not the student, ended the check (gradlab's own
    trouble: never kept as a grade); a sandbox that said so itself (got.environment) is one too. Made once, complete:
    what it ran on (the installed torch, gradlab's version, one CPU thread) and its points (a check per claim)."""
    verdict = _Verdict(metrics={"exercise": exercise.name})
    student_output(verdict, got)
    if got.ok:
        _compare(exercise, reference, got.outputs, verdict, got.nonfinite, got.traced)
    else:
        _not_reached(exercise, reference, got, verdict)
    own_code(exercise, got, verdict)
    if verdict.accepted and all(c.passed for c in verdict.claims):  # not when a forbidden call failed it after all
        verdict.notes.append(verdict.accepted)
    if got.sandbox:
        verdict.metrics["sandbox"] = got.sandbox
    if environment or got.environment:
        verdict.metrics["environment"] = environment or verdict.stopped or got.environment
    verdict.metrics["points"] = points.total(verdict.claims)  # one point per check (JUnit, --json)
    return Result(lesson="check", title=f"{exercise.name}: {exercise.what}", seed=seed, metrics=verdict.metrics,
                  claims=verdict.claims, tables=verdict.tables, notes=verdict.notes, stopped=verdict.stopped,
                  config={"file": file} if file else {}, torch=installed_torch(), version=__version__, device="cpu",
                  threads=1, threads_why="the submission runs on one thread")


@functools.cache
def installed_torch() -> str:
    """torch.__version__, without importing torch when nothing has (a check stopped by its pre-flight): read from
    torch/version.py, which is what torch.__version__ is."""
    if "torch" in sys.modules:
        return sys.modules["torch"].__version__
    spec = importlib.util.find_spec("torch")
    text = Path(spec.submodule_search_locations[0], "version.py").read_text() if spec else ""
    found = re.search(r"^__version__ = '([^']+)'", text, re.M)
    return found[1] if found else "unknown"


def _not_reached(exercise: Exercise, reference: Reference | None, got: Received, verdict: _Verdict) -> None:
    """Every check there, not reached (NaN fails): a course's points add up the same way as for an answer that ran;
    an exception students often meet gets its fix."""
    verdict.stopped = returned(got.error)
    verdict.metrics["trace"] = got.trace
    verdict.claims = [Claim.not_reached(f"{exercise.name}:{kind}", text, bound)
                     for kind, (text, bound) in exercise.claims.items()]
    verdict.claims += [Claim.not_reached(f"{exercise.name}:extra{i}", text, bound, op)
                      for i, (text, bound, op) in enumerate(exercise.all_rules())]
    if got.kind == "raised":
        from gradlab.practice.judging import exception_advice

        fix = exception_advice.explain_error(reference.checks if reference else checks_of(exercise), got.error)
        if fix:
            verdict.metrics["diagnosis"] = fix


@dataclass(frozen=True)
class _Comparison:
    """The submission's outputs against the reference's, input by input."""

    diffs: list[float]  # DIFFERENCE on each input
    bounds: list[float]  # what each input's kind of check allows
    passed: list[bool]


def _compare(exercise: Exercise, reference: Reference, outputs: list[dict], verdict: _Verdict,
             nonfinite: dict | None = None, traced: tuple | None = None) -> None:
    """The table of inputs, a claim per kind of input and per rule; the diagnosis when one fails (NONFINITE: the
    sandbox's line where the first NaN or inf appeared; TRACED: its operations traced, for the line where a value
    first departs), else a note on an answer that is right but not exact."""
    from gradlab.practice.judging import departure, diagnosis

    cases = reference.cases
    diffs = [difference(values(o), values(r)) for o, r in zip(outputs, reference.outputs, strict=True)]
    bounds = [exercise.claims[c["kind"]][1] for c in cases]
    comparison = _Comparison(diffs, bounds, [d <= b for d, b in zip(diffs, bounds, strict=True)])
    rows = [[c["label"], c["kind"], d, "✓" if p else "✗"] for c, d, p in zip(cases, diffs, comparison.passed,
                                                                             strict=True)]
    verdict.tables.append(Table(f"your {exercise.function}() against the reference, input by input (difference: "
                               f"{DIFFERENCE})",
                               [Column(header="input"), Column(header="checks"),
                                Column(header="difference", format=".3g"), Column(header="")], rows))
    for kind, (text, bound) in exercise.claims.items():
        worst = max(d for c, d in zip(cases, diffs, strict=True) if c["kind"] == kind)
        verdict.claims.append(Claim(f"{exercise.name}:{kind}", text, worst, bound))
    measured = list(reference.checks.extra(outputs, cases))
    changed = diagnosis.changed_inputs(exercise, outputs)
    if exercise.keeps:
        measured.append(len(changed))
    if exercise.no_autograd:
        measured.append(max(float(o.get(GRAPH, 0)) for o in outputs))
    verdict.claims += [Claim(f"{exercise.name}:extra{i}", text, value, bound, op)
                      for i, ((text, bound, op), value) in enumerate(zip(exercise.all_rules(), measured, strict=True))]
    if all(c.passed for c in verdict.claims):
        verdict.accepted = diagnosis.accepted(reference.checks, cases, outputs, reference.outputs, diffs)
    else:
        verdict.metrics["diagnosis"] = _why_wrong(exercise, reference, outputs, comparison, changed=changed,
                                                 graph=measured[-1] if exercise.no_autograd else 0,
                                                 claims=verdict.claims, nonfinite=nonfinite)
        if not all(comparison.passed) and (departs := departure.departure(
                reference.checks, cases, [values(o) for o in outputs], [values(r) for r in reference.outputs],
                comparison.passed, bounds, traced, exercise=exercise.name)):
            verdict.metrics["diagnosis"] += f"; {departs}"


def _why_wrong(exercise: Exercise, reference: Reference, outputs: list[dict], comparison: _Comparison, *,
               changed: list[str], graph: float, claims: list[Claim], nonfinite: dict | None = None) -> str:
    """What to tell the author of a failing answer: a broken rule when the values are right (an input CHANGED in
    place, an exercise's own rule, an autograd GRAPH built), else what the diagnosis finds in the values."""
    from gradlab.practice.judging import diagnosis

    if all(comparison.passed) and changed:
        return (f"your values are right, but your function changed {', '.join(changed)} in place (an in-place "
                f"operation: -=, mul_, copy_…) where the exercise says {'they are' if len(changed) > 1 else 'it is'}"
                " not changed: compute new tensors (x * s, not x *= s or x.mul_(s)) and return those")
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
                              comparison.bounds, nonfinite=nonfinite)


def returned(error: str) -> str:
    """A harness's Returned (the function returned the wrong kind of thing) said as such, not as an exception the
    function raised (a sandbox that reports every exception as "raised" gives 'f() raised on the input …: Returned:
    …')."""
    found = re.match(r"(\w+)\(\) raised on the input '(.*?)': Returned: (.*)$", error, re.S)
    return f"{found[1]}() returned on the input '{found[2]}': {found[3]}" if found else error


PRINTED_LINES = 20  # the last lines of what the submission printed that a check shows


def student_output(verdict: _Verdict, got: Received) -> None:
    """What the submission printed (its last lines, with the total size) and the warnings it raised, for the Result:
    the report shows them under the checks, --json writes them (metrics printed, printed_bytes, warnings)."""
    printed = got.printed
    if printed.strip():
        lines = printed.rstrip("\n").splitlines()
        tail = "\n".join(lines[-PRINTED_LINES:])[-2000:]
        verdict.metrics["printed"] = tail
        verdict.metrics["printed_bytes"] = got.printed_bytes or len(printed.encode())
        verdict.metrics["printed_lines"] = len(lines)
    warnings = list(got.warnings)
    if warnings:  # at most 10, each cut to 300 characters
        verdict.metrics["warnings"] = [w if len(w) <= 300 else w[:299] + "…" for w in warnings[:10]]


def own_code(exercise: Exercise, got: Received, verdict: _Verdict) -> None:
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
    verdict.claims.append(Claim(f"{exercise.name}:own", text, float(len(used)), 0) if got.ok
                         else Claim.not_reached(f"{exercise.name}:own", text, 0))
    if used:
        why = f"uses {', '.join(used)}, which this exercise asks you to write"
        verdict.metrics["own_code"] = why
        # the call the file makes leads: what else was measured (in place, a graph, passes counted) follows it
        before = verdict.metrics.get("diagnosis")
        verdict.metrics["diagnosis"] = f"{why}; {before}" if before else why
