"""A check's points as JUnit and `--json` count them: every check is worth one point, each claim (a passing claim
scores 1), and a submission that stopped (a syntax error, an endless loop, an exception) scores 0 of the claims it
would have had. A course's points per exercise are gradlab.practice.classroom.course.score's."""

from __future__ import annotations

from gradlab.kit.result import Claim, Result
from gradlab.kit.text import sanitize


def per_check(result: Result) -> list[dict]:
    """[{"name", "score", "max_score", "output"}] one per check, the diagnosis in the output of those that fail."""
    why = result.stopped or result.metrics.get("diagnosis", "")
    return [{"name": sanitize(f"{result.metrics['exercise']}: {c.text}", backslash=False), "score": int(c.passed),
             "max_score": 1, "output": sanitize(f"measured {c.value:.6g}, bound {c.op} {c.bound:.6g}"
                                                + ("" if c.passed or not why else
                                                   f"\n{'stopped' if result.stopped else 'diagnosis'}: {why}"),
                                                backslash=False)}
            for c in result.claims]


def total(claims: list[Claim]) -> dict:
    """{"score", "max_score"}: per_check()'s points added up (a passing claim 1, every claim 1 at most)."""
    return {"score": sum(int(c.passed) for c in claims), "max_score": len(claims)}
