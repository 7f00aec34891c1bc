"""A course file (course.toml): which file of a submission is which exercise, and what each is worth.

    [grading]                 # optional: the defaults of every exercise below
    points = 10               # an exercise's points
    scoring = "claims"        # "claims", "all-or-nothing" or "per-check" (see score())
    deduct = 0.25             # "claims": the share of the points each broken lesser rule takes away
    forbidden = 1             # the share a call of the library function the exercise asks for takes away
    due = 2026-12-01T23:59:00+01:00   # optional: when it is due (with its time zone)
    late_per_day = 0.1        # the share of the points each started day late takes away
    late_cap = 0.5            # at most this share in all

A teacher's overrides (overrides.csv) and the students' submission times (submitted.csv) sit beside the course file:
gradlab.practice.classroom.adjust.

    [exercises]
    "sgd_step.py" = "mnist.sgd_step"
    "softmax_grad.py" = { exercise = "mnist.softmax_grad", points = 20, scoring = "all-or-nothing" }

A Result's claims are of two kinds (gradlab.practice.judging.judge): those about the answer (its comparison with the
reference on each kind of input, and the exercise's own properties of it, such as "the clipped norm is at most c")
and the rules every exercise of that shape has (its inputs left as it found them, no autograd graph, no call to the
library function it asks students to write). score() turns them into points; an answer that no comparison with the
reference holds for earns nothing from its properties alone.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from gradlab.errors import GradlabError
from gradlab.kit.result import NOT_REACHED, Result
from gradlab.lessons import LESSONS
from gradlab.practice import all_exercises
from gradlab.practice.classroom import own

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, before it joined the standard library
    import tomli as tomllib

SCORINGS = ("claims", "all-or-nothing", "per-check")
DEFAULTS = {"points": 10.0, "scoring": "claims", "deduct": 0.25, "forbidden": 1.0, "due": "", "late_per_day": 0.0,
            "late_cap": 1.0}
LATE = ("due", "late_per_day", "late_cap")  # applied to a graded record (adjust.py): no part of what grades it


@dataclass(frozen=True)
class Item:
    """One graded file of a course: FILE (a .py name) is EXERCISE, worth POINTS, scored by SCORING."""

    file: str
    exercise: str
    points: float = 10.0
    scoring: str = "claims"
    deduct: float = 0.25  # "claims": the share of POINTS each broken lesser rule takes away
    forbidden: float = 1.0  # "claims", "per-check": the share a call of the function the exercise asks for takes away
    due: str = ""  # when it is due (ISO 8601, with its offset), "" for never late
    late_per_day: float = 0.0  # the share of POINTS each started day late takes away
    late_cap: float = 1.0  # the most a late submission loses, as a share of POINTS

    def key(self, seed: int, version: str) -> str:
        """What a stored grade of this item depends on besides the file: a change of it grades the file again."""
        graded = {k: v for k, v in asdict(self).items() if k not in LATE}  # a new due date grades nothing again
        return hashlib.sha256(json.dumps([graded, seed, version]).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Score:
    """An exercise's points for one submission: SCORE of POINTS, and how (one line per deduction or share)."""

    score: float
    points: float
    how: str


def read(path: str) -> list[Item]:
    """The items of the course file at PATH, checked: one clear GradlabError for anything wrong."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise GradlabError(f"--course {path}: {e.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise GradlabError(f"--course {path} is not valid TOML ({' '.join(str(e).split())}); see `gradlab grade "
                           f"--help` for the format") from None
    unknown = sorted(set(data) - {"exercises", "grading", "own"})
    if unknown:
        raise GradlabError(f"--course {path}: unknown key {unknown[0]!r}; a course file has [exercises], [grading] "
                           "and own")
    _own(path, data.get("own", []))
    table = data.get("exercises")
    if not isinstance(table, dict) or not table:
        raise GradlabError(f"--course {path} has no [exercises] table of \"file.py\" = \"lesson.exercise\" lines")
    defaults = _settings(data.get("grading", {}), DEFAULTS, f"--course {path}: [grading]")
    return [_item(path, name, entry, defaults) for name, entry in table.items()]


def own_digest(path: str | None) -> str:
    """A digest of every .py file of the course's own exercise folders (own = [...]), "" without any: part of what a
    re-run of `gradlab grade` compares, so that a teacher's edited harness or checks grade the class again."""
    if path is None:
        return ""
    with open(path, "rb") as f:
        folders = tomllib.load(f).get("own", [])
    digest = hashlib.sha256()
    for folder in [folders] if isinstance(folders, str) else folders:
        where = Path(path).resolve().parent / folder  # an absolute folder, or one beside the course's, is as good
        for file in sorted(where.rglob("*.py")):
            digest.update(f"{folder}/{file.relative_to(where)}".encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:16] if folders else ""


def _own(path: str, folders) -> None:
    """A teacher's own exercises, in the folders OWN names (relative to the course file):
    gradlab.practice.classroom.own."""
    if isinstance(folders, str):
        folders = [folders]
    if not isinstance(folders, list) or not all(isinstance(f, str) for f in folders):
        raise GradlabError(f"--course {path}: own = {folders!r} must name folders, e.g. own = [\"linreg\"]")
    for folder in folders:
        own.load(Path(path).resolve().parent / folder, f"--course {path}")


def _item(path: str, name: str, entry, defaults: dict) -> Item:
    where = f"--course {path}: {name!r}"
    exercise = entry.get("exercise") if isinstance(entry, dict) else entry
    if not (isinstance(exercise, str) and name.endswith(".py") and "/" not in name and "\\" not in name
            and name not in (".py", "..py")):
        raise GradlabError(f"--course {path}: {name!r} = {exercise!r} must name a .py file (no folder) and an "
                           "exercise as a string")
    if exercise not in all_exercises():
        raise GradlabError(f"--course {path}: unknown exercise {exercise!r} for {name}; gradlab exercises lists them")
    own = {k: v for k, v in entry.items() if k != "exercise"} if isinstance(entry, dict) else {}
    return Item(name, exercise, **_settings(own, defaults, where))


def _settings(given, defaults: dict, where: str) -> dict:
    """DEFAULTS overridden by GIVEN (a TOML table), each value checked."""
    if not isinstance(given, dict):
        raise GradlabError(f"{where} must be a table of points, scoring, deduct, forbidden, due, late_per_day and "
                           "late_cap")
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise GradlabError(f"{where}: unknown key {unknown[0]!r}; the keys are exercise, points, scoring, deduct, "
                           "forbidden, due, late_per_day and late_cap")
    out = dict(defaults) | given
    points, scoring, deduct, forbidden = out["points"], out["scoring"], out["deduct"], out["forbidden"]
    if isinstance(points, bool) or not isinstance(points, int | float) or not 0 < points <= 1e6:
        raise GradlabError(f"{where}: points = {points!r} must be a number above 0")
    if scoring not in SCORINGS:
        raise GradlabError(f"{where}: scoring = {scoring!r} must be one of {', '.join(map(repr, SCORINGS))}")
    if isinstance(deduct, bool) or not isinstance(deduct, int | float) or not 0 <= deduct <= 1:
        raise GradlabError(f"{where}: deduct = {deduct!r} must be a share of the points, from 0 to 1")
    if isinstance(forbidden, bool) or not isinstance(forbidden, int | float) or not 0 <= forbidden <= 1:
        raise GradlabError(f"{where}: forbidden = {forbidden!r} must be a share of the points, from 0 to 1")
    for key in ("late_per_day", "late_cap"):
        if isinstance(out[key], bool) or not isinstance(out[key], int | float) or not 0 <= out[key] <= 1:
            raise GradlabError(f"{where}: {key} = {out[key]!r} must be a share of the points, from 0 to 1")
    return {"points": float(points), "scoring": scoring, "deduct": float(deduct), "forbidden": float(forbidden),
            "due": _due(out["due"], where), "late_per_day": float(out["late_per_day"]),
            "late_cap": float(out["late_cap"])}


def _due(value, where: str) -> str:
    """A due date as ISO 8601 with its offset ("" for none): a TOML date-time with its time zone."""
    if value == "":
        return ""
    if isinstance(value, str):  # [grading]'s, already read (or a quoted one)
        with contextlib.suppress(ValueError):
            value = datetime.datetime.fromisoformat(value)
    if not isinstance(value, datetime.datetime) or value.utcoffset() is None:
        raise GradlabError(f"{where}: due = {value!r} must be a date and time with its time zone, e.g. due = "
                           "2026-12-01T23:59:00+01:00")
    return value.isoformat()


def is_rule(claim_id: str, exercise_name: str) -> bool:
    """Whether a claim of EXERCISE_NAME's Result is a rule (inputs unchanged, no autograd graph, no forbidden call)
    rather than a claim about the answer. Claim ids: NAME:kind for the reference comparisons, NAME:extraI for the
    exercise's own properties then its rules in Exercise.all_rules() order, NAME:own for the forbidden calls."""
    exercise = all_exercises()[exercise_name]
    suffix = claim_id.rsplit(":", 1)[-1]
    if suffix == "own":
        return True
    if suffix.startswith("extra") and suffix[5:].isdigit():
        return int(suffix[5:]) >= len(exercise.rules)  # past the exercise's own: keeps, no_autograd
    return False


def score(result: Result, item: Item) -> Score:
    """ITEM's points for RESULT. "claims": the claims about the answer share the points equally, and each broken
    lesser rule (inputs changed in place, an autograd graph left) takes away DEDUCT of them; "all-or-nothing": every
    point when every check passes, else none; "per-check": every check an equal share (what `gradlab check --json`
    counts, one point each). Under "claims" and "per-check" a call of the library function the exercise asks students
    to write (or of an alias: Exercise.forbidden) then takes away FORBIDDEN of the points (1 by default: none are
    left). Never below 0."""
    claims = result.claims
    passed_all = result.stopped is None and all(c.passed for c in claims)
    called = any(c.id.rsplit(":", 1)[-1] == "own" and c.kind != NOT_REACHED and not c.passed for c in claims)
    if item.scoring == "all-or-nothing" or not claims:
        return Score(item.points if passed_all else 0.0, item.points,
                     "every check passes" if passed_all else "not every check passes")
    if item.scoring == "per-check":
        got = sum(c.passed for c in claims)
        value, how = item.points * got / len(claims), f"{got} of {len(claims)} checks pass"
    else:
        value, how = _claims(result, item)
    if called and item.forbidden:
        value = max(0.0, value - item.forbidden * item.points)
        how += ", calls the library function the exercise asks you to write " + (
            "(no points for it)" if item.forbidden >= 1 else f"(−{item.forbidden:g} of the points)")
    return Score(round(value, 2), item.points, how)


def _claims(result: Result, item: Item) -> tuple[float, str]:
    """The "claims" scoring before a forbidden call: the points and how, in words."""
    claims = result.claims
    answer = [c for c in claims if not is_rule(c.id, item.exercise)]
    broken = [c for c in claims if is_rule(c.id, item.exercise) and not c.passed and not c.id.endswith(":own")]
    share = sum(c.passed for c in answer) / len(answer) if answer else float(result.stopped is None)
    compared = [c for c in answer if not c.id.rsplit(":", 1)[-1].startswith("extra")]  # with the reference
    if compared and not any(c.passed for c in compared):
        # wrong on every kind of input: the exercise's own properties alone ("the clipped norm is at most c", "no
        # gradient reaches the target network") are what many wrong answers have too, so they earn nothing alone
        share = 0.0
    value = max(0.0, item.points * share - item.deduct * item.points * len(broken))
    how = f"{sum(c.passed for c in answer)} of {len(answer)} claims about the answer"
    if compared and share == 0 and any(c.passed for c in answer):
        how += " (none of its comparisons with the reference holds, so its properties earn nothing alone)"
    if broken and share > 0:
        how += f", {len(broken)} broken rule{'s' if len(broken) > 1 else ''} (−{item.deduct:g} of the points each)"
    return value, how


# The repository's teacher kit, never in the wheel: each lesson's graded variant (LessonInfo.graded_variant) is in it
GRADED_KIT = "teacher/graded/course.toml"


def lesson_answer_note(exercise_name: str) -> str | None:
    """The note `gradlab grade` gives the teacher when a student can read EXERCISE_NAME's answer in what they have:
    what of the installed gradlab passes its check as it is, and the function of the lesson that answers it as it
    is or adapted (`--explain` does not print it, but its source is in every student's gradlab), and the exercise's
    graded variant to grade instead: each as its lesson declares it (passes_check, answered_by, graded_variant in
    gradlab/lessons/<lesson>/__init__.py); None when gradlab holds none. Imports the lesson (torch)."""
    exercise = all_exercises()[exercise_name]
    if exercise.package:  # a teacher's own: no lesson holds it
        return None
    lesson = LESSONS[exercise.lesson]  # what it declares in its folder (gradlab/lessons/<lesson>/__init__.py)
    parts = [f"{q.rpartition('.')[2]} in {q.rpartition('.')[0].replace('.', '/')}.py passes its check as it is"
             for q in lesson.passes_check.get(exercise.function, ())]
    name = lesson.answered_by.get(exercise.function, exercise.function)
    held = getattr(lesson.load(), name, None)
    if getattr(held, "__module__", "").startswith("gradlab."):  # not a library's (jacobian's torch.func.vjp)
        parts.insert(0, f"the lesson {exercise.lesson} holds {name}, which answers {exercise_name} (as it is, or "
                        "adapted in a few lines; `--explain` does not print it)")
    if not parts:
        return None
    variant = lesson.graded_variant
    instead = (f"; for an exam, grade its variant {variant} instead, from gradlab's repository (the teacher kit "
               f"{GRADED_KIT}, which no wheel carries: teacher/README.md)") if variant else ""
    return (f"every student's gradlab holds an answer to {exercise_name}: {'; '.join(parts)}: fine for practice, "
            f"not for an exam{instead}")
