"""What a teacher adds to what `gradlab grade` graded, applied on every run (a record keeps what its check gave under
"graded", so that a re-run starts from it again): a late submission's penalty, from course.toml's `due`,
`late_per_day` and `late_cap` and each student's submission time, and the teacher's own overrides.

Beside the course file:

    overrides.csv    student,exercise,points,penalty,reason     (points: the score to give; penalty: points to take
                     alice,mnist.sgd_step,8,,regrade request    away; one of the two per row; the reason is shown
                     bob,sgd_step.py,,2,copied from a classmate  to the student; a column `for_file`, which gradlab
                                                                adds and fills the first time it applies a row: the
                                                                file's digest and when it was graded)
    submitted.csv    student,time                              (when each student handed in, ISO 8601 with its
                     alice,2026-12-02T10:15:00+01:00            offset: the times an LMS or Classroom shows)

A student with no row in submitted.csv whose folder is a git clone (GitHub Classroom) is taken as handed in at its
last commit's committer time: what the student's machine said, so a time a teacher trusts goes in submitted.csv.
An LMS download gives no time (gradlab.practice.classroom.lms): a Canvas file marked LATE is late by a time nobody
wrote down, so no penalty is taken from it and the teacher is told which students to give a time in submitted.csv.
"""

from __future__ import annotations

import csv
import datetime
import io
import math
import os
import subprocess
from dataclasses import dataclass

from gradlab.errors import GradlabError
from gradlab.kit.text import one_line, sanitize
from gradlab.practice.classroom.course import Item
from gradlab.report.files import write_bytes

OVERRIDES = "overrides.csv"
FOR_FILE = "for_file"  # overrides.csv's column that ties a row to the file it was written for (filled by gradlab)
COLUMNS = ("student", "exercise", "points", "penalty", "reason")
GIT = "git commit time: the student's own clock, not verified"
SUBMITTED = "submitted.csv"
DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Override:
    """One row of overrides.csv: STUDENT's EXERCISE (its name or its file) given POINTS, or PENALTY points taken away,
    for REASON."""

    line: int
    student: str
    exercise: str
    points: float | None
    penalty: float | None
    reason: str
    for_file: str = ""  # "DIGEST graded WHEN": the file the row was first applied to; "" until then


def beside(course_path: str | None, name: str) -> str | None:
    """NAME's path beside the course file, when there is one."""
    return os.path.join(os.path.dirname(os.path.abspath(course_path)), name) if course_path else None


def _rows(path: str, columns: tuple[str, ...]) -> list[tuple[int, dict]]:
    """The rows of the CSV file at PATH as (line, {column: text}), its header holding COLUMNS: one line for anything
    wrong."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                raise GradlabError(f"{path}: its first line must name the columns {','.join(columns)} (no "
                                   f"{missing[0]!r}); nothing was written")
            return [(reader.line_num, {k: (v or "").strip() for k, v in row.items() if k}) for row in reader]
    except OSError as e:
        raise GradlabError(f"{path}: {e.strerror}; nothing was written") from None
    except (UnicodeDecodeError, csv.Error) as e:
        raise GradlabError(f"{path} is not a UTF-8 CSV file ({one_line(str(e), 80)}); nothing was written") from None


def _number(path: str, line: int, key: str, text: str) -> float | None:
    if text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise GradlabError(f"{path} line {line}: {key} = {text!r} must be a number of points, 0 or more; nothing was "
                           "written")
    return value


def read_overrides(course_path: str | None, items: list[Item]) -> list[Override]:
    """overrides.csv beside the course file, checked (none when there is no such file)."""
    path = beside(course_path, OVERRIDES)
    if path is None or not os.path.exists(path):
        return []
    known = {i.exercise for i in items} | {i.file for i in items}
    out = []
    for line, row in _rows(path, COLUMNS):
        points = _number(path, line, "points", row["points"])
        penalty = _number(path, line, "penalty", row["penalty"])
        if not row["student"]:
            raise GradlabError(f"{path} line {line}: no student; nothing was written")
        if row["exercise"] not in known:
            raise GradlabError(f"{path} line {line}: exercise {row['exercise']!r} is not one of the course's "
                               f"({', '.join(i.exercise for i in items)}, or their files); nothing was written")
        if (points is None) == (penalty is None):
            raise GradlabError(f"{path} line {line}: give points (the score) or penalty (points taken away), one "
                               "of the two; nothing was written")
        item = next(i for i in items if row["exercise"] in (i.exercise, i.file))
        if points is not None and points > item.points:
            raise GradlabError(f"{path} line {line}: points = {row['points']} is more than {item.exercise}'s "
                               f"{item.points:g}; nothing was written")
        if not row["reason"]:
            raise GradlabError(f"{path} line {line}: give a reason (the student reads it); nothing was written")
        out.append(Override(line, row["student"], item.file, points, penalty, row["reason"], row.get(FOR_FILE, "")))
    return out


def read_times(course_path: str | None) -> dict[str, datetime.datetime]:
    """{student: when they handed in} from submitted.csv beside the course file (none when there is no such file)."""
    path = beside(course_path, SUBMITTED)
    if path is None or not os.path.exists(path):
        return {}
    out = {}
    for line, row in _rows(path, ("student", "time")):
        try:
            when = datetime.datetime.fromisoformat(row["time"])
        except ValueError:
            when = None
        if when is None or when.utcoffset() is None:
            raise GradlabError(f"{path} line {line}: time = {row['time']!r} must be a date and time with its time "
                               "zone, e.g. 2026-12-02T10:15:00+01:00; nothing was written")
        out[row["student"]] = when
    return out


def commit_time(folder: str) -> datetime.datetime | None:
    """The committer time of the last commit of FOLDER/.git (a GitHub Classroom clone), or None. Git reads the
    repository as data only: no pager, no signature check, no hook, no system or global configuration, no search
    above the folder."""
    git_dir = os.path.join(folder, ".git")
    if os.path.islink(git_dir) or not os.path.isdir(git_dir):
        return None
    env = {"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "HOME": os.devnull,
           "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        r = subprocess.run(["git", "--no-pager", f"--git-dir={git_dir}", "-c", "core.fsmonitor=false", "-c",
                            "safe.directory=*", "log", "-1", "--no-show-signature", "--format=%cI"],
                           capture_output=True, text=True, timeout=10, env=env, stdin=subprocess.DEVNULL, check=False)
        return datetime.datetime.fromisoformat(r.stdout.strip()) if r.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def unknown_lateness(marked: list[str], items: list[Item]) -> str | None:
    """The note for MARKED, the students whose Canvas files are marked LATE and who have no time, when the course has
    a late policy: what was assumed (no penalty), and what gives one."""
    if not marked or not any(i.due and i.late_per_day for i in items):
        return None
    names = ", ".join(sanitize(s) for s in marked[:4]) + (", …" if len(marked) > 4 else "")
    whose = "1 student's" if len(marked) == 1 else f"{len(marked)} students'"
    return (f"Canvas marked {whose} files LATE ({names}), which says "
            "late but not by how long: no late penalty was taken from them; give their times in submitted.csv to "
            "apply the late policy")


def _fmt(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def points(x: float) -> str:
    """X points in words: 1 point, 2 points, 0.5 points."""
    return f"{_fmt(x)} point{'' if _fmt(x) == '1' else 's'}"


def duration(late: datetime.timedelta) -> str:
    """LATE in words, as long as it is: 1 day 8 h, 3 h 5 min, 40 s."""
    seconds = int(late.total_seconds())
    days, rest = divmod(seconds, 86400)
    parts = [f"{days} day{'s' if days != 1 else ''}"] * bool(days)
    parts += [f"{rest // 3600} h"] * bool(rest // 3600) + [f"{rest % 3600 // 60} min"] * bool(rest % 3600 // 60)
    return " ".join(parts) or f"{seconds} s"


@dataclass
class Applied:
    """What apply() tells the teacher (NOTES, a line each) and the overrides.csv rows it tied to a file (PINS: {row's
    line: its for_file cell})."""

    notes: list[str]
    pins: dict[int, str]


def apply(table: dict[str, dict[str, dict]], items: list[Item], overrides: list[Override],
          times: dict[str, datetime.datetime], sources: dict[str, str] | None = None, now: str = "") -> Applied:
    """Each record's score from what its check gave ("graded"), less a late penalty, then as the teacher's overrides
    say; "adjusted": a line per change, shown in every file written. SOURCES: where each student's time came from
    (submitted.csv when not named). NOW: when this run graded (an override's file is said graded then when its record
    does not say). An override tied to another file than the record's (for_file) is not applied: a note says so."""
    done = Applied([], {})
    for student, recs in table.items():
        for item in items:
            rec = recs[item.file]
            graded = rec.setdefault("graded", rec["score"])
            lines = []
            late = _late(rec, item, times.get(student), (sources or {}).get(student, SUBMITTED))
            if late:
                lines.append(late[1])
            score = max(0.0, graded - late[0]) if late else graded
            for o in overrides:
                if o.student == student and o.exercise == item.file:
                    score = _override(o, rec, score, late[0] if late else 0.0, lines, done, now)
            rec["score"] = round(score, 2)
            rec["adjusted"] = lines
    done.notes += [f"{OVERRIDES} line {o.line}: no student {sanitize(o.student)!r} in this class; the row is not "
                   "applied" for o in overrides if o.student not in table]
    return done


def _late(rec: dict, item: Item, when: datetime.datetime | None, source: str) -> tuple[float, str] | None:
    """(the points a late submission loses, the line that says why), or None when it is not late."""
    if not item.due or when is None or not item.late_per_day or _missing(rec):
        return None
    due = datetime.datetime.fromisoformat(item.due)
    days = math.ceil((when - due) / DAY)  # started days: 1 min late is 1 day
    if days <= 0:
        return None
    share = min(item.late_cap, days * item.late_per_day)
    taken = share * item.points
    capped = f", at most {_fmt(100 * item.late_cap)} %" if share < days * item.late_per_day else ""
    return taken, (f"late: handed in {when.isoformat()} ({source}), {duration(when - due)} after the due date "
                   f"{item.due}, {days} started day{'s' if days != 1 else ''} × {_fmt(100 * item.late_per_day)} %"
                   f"{capped}: −{points(taken)}")


def _override(o: Override, rec: dict, score: float, late: float, lines: list[str], done: Applied, now: str) -> float:
    """SCORE after override O of REC (a line added to LINES), or SCORE when O was written for another file than REC's
    (a note added to DONE); O tied to REC's file (DONE.pins) when it was tied to none."""
    digest = str(rec.get("digest") or "")[:16]
    said = _fmt(o.points) if o.points is not None else f"−{_fmt(o.penalty)}"
    if o.for_file and o.for_file.split()[0] != digest:
        on = one_line(o.for_file.split(" graded ", 1)[1] if " graded " in o.for_file else
                      f"digest {o.for_file.split()[0]}", 80)  # the teacher's cell, shown on one line
        done.notes.append(f"{sanitize(o.student)}'s override of {o.exercise} ({said}) is for the file graded on {on}; "
                          f"the file changed: regraded {_fmt(rec['graded'])}, override not applied — update or "
                          f"remove its row in {OVERRIDES} (line {o.line}; an empty {FOR_FILE} cell ties it to this "
                          "file)")
        return score
    if not o.for_file:
        done.pins[o.line] = f"{digest} graded {rec.get('when') or now}"
    if o.penalty is not None:
        lines.append(f"overridden by the teacher: −{points(o.penalty)} ({o.reason})")
        return max(0.0, score - o.penalty)
    replaced = f"the check's {_fmt(rec['graded'])}" + (f" and the late penalty's −{_fmt(late)}" if late else "")
    lines.append(f"overridden by the teacher: {points(o.points)}, which replaces {replaced} ({o.reason})")
    return o.points


def pin(course_path: str | None, pins: dict[int, str]) -> str | None:
    """overrides.csv rewritten (atomically) with PINS ({row's line: its for_file cell}) filled in, its other cells as
    they were; a note when it cannot be (the rows were applied, and are tied to a file on a later run)."""
    path = beside(course_path, OVERRIDES)
    if not pins or path is None:
        return None
    try:
        _pin(path, pins)
    except (OSError, UnicodeError, csv.Error, GradlabError) as e:
        return f"{path}: could not fill in its {FOR_FILE} column ({one_line(str(e), 120)}); its rows were applied " \
               "and are tied to their files on the next run"
    return None


def _pin(path: str, pins: dict[int, str]) -> None:
    with open(path, "rb") as f:
        bom = f.read(3) == b"\xef\xbb\xbf"  # kept: a spreadsheet reads a UTF-8 file by it
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f)
        fields = [c for c in reader.fieldnames or [] if c]
        rows = [(reader.line_num, row) for row in reader]
    out = io.StringIO()
    writer = csv.DictWriter(out, fields + [FOR_FILE] * (FOR_FILE not in fields), extrasaction="ignore",
                            lineterminator="\n")
    writer.writeheader()
    for line, row in rows:
        writer.writerow({**row, FOR_FILE: pins.get(line, row.get(FOR_FILE) or "")})
    write_bytes(path, out.getvalue().encode("utf-8-sig" if bom else "utf-8"))


def _missing(rec: dict) -> bool:
    return (rec.get("stopped") or "").endswith("is missing from this submission")
