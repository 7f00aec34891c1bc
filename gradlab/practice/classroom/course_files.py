"""What courses read: JUnit XML (CI), Gradescope's autograder results.json and GitHub Classroom's result, from check
Results.

In JUnit and `--json` every check is worth one point: each claim (a passing claim scores 1), and a submission that
stopped (a syntax error, an endless loop, an exception) scores 0 of the claims it would have had. Gradescope's and
Classroom's files have a test per exercise, scored as the course file says (gradlab.practice.classroom.course.score).
"""

from __future__ import annotations

import json
import re
from xml.sax.saxutils import escape, quoteattr

from gradlab.kit.result import Result
from gradlab.kit.text import sanitize
from gradlab.practice.judging.points import per_check

# What XML 1.0 cannot hold at all, even escaped: sanitize() already shows them as escapes; this is the last guard
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    return _NOT_XML.sub("\ufffd", sanitize(text, backslash=False))


def _by_exercise(results: list[Result], scores: list) -> list[dict]:
    """[{"name", "score", "max_score", "output"}] a test per exercise, scored as SCORES say
    (gradlab.practice.classroom.course.Score, one per result); its output lists the checks with ✓/✗ and the
    diagnosis."""
    tests = []
    for r, s in zip(results, scores, strict=True):
        why = r.stopped or r.metrics.get("diagnosis", "")
        lines = [f"{s.how}", *(c.line for c in r.claims)]
        lines += [f"{'stopped' if r.stopped else 'diagnosis'}: {why}"] if why else []
        tests.append({"name": sanitize(f"{r.metrics['exercise']} ({r.config.get('file', '')})"), "score": s.score,
                      "max_score": s.points, "output": sanitize("\n".join(lines))})
    return tests


def gradescope(results: list[Result], scores: list) -> str:
    """Gradescope's results.json for one student, in the format of Gradescope's "Autograder Specifications"
    (gradescope-autograders.readthedocs.io/en/latest/specs/): {"score", "output", "tests": [{"name", "score",
    "max_score", "status", "output"}]}, a test per exercise; the total of the points in "extra_data"."""
    tests = [t | {"status": "passed" if t["score"] >= t["max_score"] else "failed"} for t in
             _by_exercise(results, scores)]
    return json.dumps({"score": round(sum(t["score"] for t in tests), 2), "output": "checked by gradlab check",
                       "extra_data": {"max_score": sum(t["max_score"] for t in tests)}, "tests": tests}, indent=2,
                      ensure_ascii=False, allow_nan=False) + "\n"


def classroom(results: list[Result], scores: list) -> str:
    """GitHub Classroom's result for one student: the JSON a grader action hands, base64-encoded, to
    classroom-resources/autograding-grading-reporter ({"version": 1, "status", "max_score", "tests": [{"name",
    "status", "score", "message", ...}]}, as autograding-command-grader writes it), whose total is the sum of the
    tests' "score" over the sum of the runners' "max_score": a test per exercise, so each earns part of its points."""
    tests = [{"name": t["name"], "status": "pass" if t["score"] >= t["max_score"] else "fail", "score": t["score"],
              "message": t["output"], "test_code": "", "filename": "", "line_no": 0, "duration": 0}
             for t in _by_exercise(results, scores)]
    return json.dumps({"version": 1, "status": "pass" if all(t["status"] == "pass" for t in tests) else "fail",
                       "max_score": sum(s.points for s in scores), "tests": tests}, ensure_ascii=False,
                      allow_nan=False) + "\n"


def junit(results: list[Result]) -> str:
    """JUnit XML: one testsuite per submission, one testcase per check, a <failure> with the diagnosis."""
    suites = []
    for r in results:
        cases, tests = [], per_check(r)
        for t in tests:
            failure = "" if t["score"] else f"<failure message={quoteattr(_xml(t['output'].splitlines()[-1]))}>" \
                                            f"{escape(_xml(t['output']))}</failure>"
            cases.append(f'    <testcase classname={quoteattr(_xml(r.metrics["exercise"]))} '
                         f'name={quoteattr(_xml(t["name"]))}>{failure}</testcase>')
        failed = sum(1 for t in tests if not t["score"])
        suites.append(f'  <testsuite name={quoteattr(_xml(str(r.config.get("file", r.metrics["exercise"]))))} '
                      f'tests="{len(cases)}" failures="{failed}">\n' + "\n".join(cases) + "\n  </testsuite>")
    return '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n' + "\n".join(suites) + "\n</testsuites>\n"
