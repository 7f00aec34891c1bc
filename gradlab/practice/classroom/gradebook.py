"""`gradlab grade`: a class's submissions found, graded in the sandbox (as many at a time as fit, as `gradlab check`
grades a folder), scored by the course's points, and kept as records (plain JSON) from which every output file is
written.

A student is a folder of SUBMISSIONS (its name is the student's), the files and folders a Canvas or Moodle download
names after one student id (gradlab.practice.classroom.lms), or with --exercise a .py file at its top (its name without
.py). A
course file is looked for inside the student's folders at any depth (a GitHub Classroom clone:
alice/src/sgd_step.py), the shallowest copy wins, a name an LMS or a browser changed (softmax_grad-1.py) when the
exact one is not there; links are never followed. A record stores the SHA-256 of the file it graded and the key of
its course item and seed: a re-run grades only what changed, and what the machine kept from being graded.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from gradlab.errors import GradlabError
from gradlab.kit.result import json_safe
from gradlab.kit.text import alike, escaped, sanitize
from gradlab.practice import all_exercises
from gradlab.practice.classroom import lms, pool
from gradlab.practice.classroom.course import Item, is_rule, score
from gradlab.practice.judging.submission import Submission, of_course

MAX_DEPTH = 6  # how deep inside a student's folder a course file is looked for
SKIPPED = {"__pycache__", "node_modules"}  # and every hidden folder (.git)


@dataclass(frozen=True)
class Task:
    """One file to grade: STUDENT's ITEM, as SUBMISSION (its shown name student/file), found at FOUND (its path
    relative to SUBMISSIONS, shown to the teacher; "" when missing), with its content's DIGEST (SHA-256 of its bytes;
    "none:" and the hash of why it cannot run when there is no file to read). The file is read once, when the task
    is made: what is graded is what was hashed (a student who swaps the file in between cannot keep another file's
    grade under its digest)."""

    student: str
    item: Item
    submission: Submission = field(repr=False, compare=False)
    digest: str
    found: str
    note: str = ""  # what the feedback says of the file's name: "found softmax_grad-1.py and graded it as ..."


def students(root: str, items: list[Item], by_file: bool, skip: str = "", notes: list[str] | None = None
             ) -> dict[str, list[str]]:
    """{student: their folders and files} in SUBMISSIONS (ROOT): a folder is a student; a file or folder an LMS named
    (gradlab.practice.classroom.lms: Canvas's flat files, Moodle's files and folders) is its student's, by the id in
    its name.
    BY_FILE (--exercise): any other top-level .py file is a student too. Hidden entries are skipped, and SKIP (the
    output folder, were it inside ROOT). Names that look alike (gradlab.kit.text.alike) are each graded, with every
    character
    outside ASCII shown as its \\u escape in every file written (аlice as \\u0430lice), so that no row reads as
    another's; NOTES gets a line saying so."""
    try:
        names = sorted(os.listdir(root))
    except OSError as e:
        raise GradlabError(f"cannot list {root}: {e.strerror}; give the folder of submissions") from None
    found: dict[str, list[str]] = {}
    owners: dict[str, lms.Owner] = {}
    for name in names:
        path = os.path.join(root, name)
        if name.startswith(".") or os.path.islink(path) or (skip and os.path.realpath(path) == os.path.realpath(skip)):
            continue
        if (owner := lms.owner(os.fsdecode(name), os.path.isdir(path))) is not None:
            owners[path] = owner
            continue
        if os.path.isdir(path):
            student = shown(name)
        elif by_file and name.endswith(".py"):
            student = shown(name[:-3])
        else:
            continue
        found[student if student not in found else shown(name)] = [path]  # alice/ and alice.py: two students
    plain = set(found)
    for path, student in lms.students(owners).items():  # a folder of the same name is another student
        student = shown(student if student not in plain else f"{student} ({owners[path].id})")
        found.setdefault(student, []).append(path)
    twins = alike(list(found))  # аlice (a Cyrillic а) beside alice, NFC josé beside NFD josé: shown apart
    found = {escaped(s) if s in twins else s: paths for s, paths in found.items()}
    if twins and notes is not None:
        notes.append(f"{len(twins)} students' names look alike ({', '.join(escaped(s) for s in list(twins)[:6])}"
                     f"{', …' if len(twins) > 6 else ''}): each is graded, its letters outside ASCII shown as \\u "
                     "escapes in every file written; rename the folders to tell them apart by name")
    if not found:
        shape = "a .py file or a folder per student" if by_file else "a folder per student (SUBMISSIONS/alice/" \
            f"{items[0].file}); for one file per student, give --exercise NAME"
        raise GradlabError(f"{root} holds no submissions: it needs {shape} (or a Canvas or Moodle download)")
    return found


def shown(name: str) -> str:
    """A folder's or file's name as a student's name: one line, every control character shown as an escape."""
    return sanitize(os.fsdecode(name)).replace("\n", "\\n").replace("\t", "\\t")


def files_in(folder: str) -> list[str]:
    """Every file inside FOLDER (at most MAX_DEPTH deep, hidden folders and SKIPPED skipped, links not followed)."""
    hits = []
    for here, dirs, files in os.walk(folder):
        depth = here[len(folder):].count(os.sep)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED) if depth < MAX_DEPTH else []
        hits += [os.path.join(here, f) for f in files]
    return hits


def tasks(root: str, items: list[Item], by_file: bool, skip: str = "", notes: list[str] | None = None,
          folders: dict[str, str] | None = None) -> list[Task]:
    """Every (student, course item) of SUBMISSIONS, located and hashed; never an exception for one student's files.
    SKIP: the output folder, not a student. NOTES: a line for the teacher is added there (names that look alike).
    FOLDERS: filled with {student: their folder or file}."""
    out = []
    found = students(root, items, by_file, skip, notes)
    if folders is not None:
        folders.update({student: paths[0] for student, paths in found.items()})
    for student, paths in found.items():
        for item in items:
            out.append(_task(root, student, paths, item, by_file))
    return out


def _candidates(paths: list[str]) -> list[tuple[str, str]]:
    """(the name the student gave it, its path) for every file of a student: inside their folders, and their files
    an LMS renamed (lms.owner)."""
    out = []
    for path in paths:
        if os.path.isdir(path):
            out += [(os.path.basename(p), p) for p in files_in(path)]
        else:
            out.append((lms.shown_file(path, lms.owner(os.fsdecode(os.path.basename(path)), False)), path))
    return out


def _task(root: str, student: str, paths: list[str], item: Item, by_file: bool = False) -> Task:
    exercise = all_exercises()[item.exercise]
    label = f"{student}/{item.file}"  # the name the check knows it by
    note = ""
    if len(paths) == 1 and os.path.isfile(paths[0]) and lms.owner(os.path.basename(paths[0]), False) is None:
        path = paths[0]  # --exercise: the student's one file, whatever its name
    else:
        files = _candidates(paths)
        hits = [p for n, p in files if n == item.file] or [p for n, p in files if lms.same_file(n, item.file)]
        python = [(n, p) for n, p in files if n.endswith(".py")]
        if not hits and by_file and len(python) == 1:  # --exercise: one file each, whatever its name
            hits = [python[0][1]]
        hits.sort(key=lambda p: (p.count(os.sep), p))
        same = [h for h in hits if h.count(os.sep) == hits[0].count(os.sep)]
        if not hits:
            close = lms.close_to([n for n, _ in files], item.file)
            hint = f" (found {sanitize(close)}, a close name: rename it {item.file})" if close else ""
            return _missing(student, item, label, f"{item.file} is missing from this submission{hint}", "")
        if len(same) > 1:
            copies = ", ".join(sanitize(os.path.relpath(h, root)) for h in same[:3])
            return _missing(student, item, label, f"{item.file} is there more than once ({copies}): keep one", "")
        path = hits[0]
        given = dict((p, n) for n, p in files)[path]
        if given != item.file:
            note = f"found {sanitize(given)} and graded it as {item.file}"
    found = sanitize(os.path.relpath(path, root))
    submission = of_course(path, exercise, shown=label, called=found)
    if submission.source is None:
        return _missing(student, item, label, submission.stop, found)
    return Task(student, item, submission, hashlib.sha256(submission.source).hexdigest(), found, note)


def _missing(student: str, item: Item, label: str, why: str, found: str) -> Task:
    """A task that cannot run: its digest is WHY's, so that a re-run keeps it only while the reason is the same."""
    submission = Submission(shown=label, exercise=all_exercises()[item.exercise], stop=why)
    return Task(student, item, submission, "none:" + hashlib.sha256(why.encode()).hexdigest(), found)


def record(task: Task, result, seed: int, version: str) -> dict:
    """What is kept of TASK's Result: plain JSON that every output file is written from, and the keys that let a
    re-run reuse it."""
    got = score(result, task.item)
    claims = [{"text": c.text, "passed": c.passed, "value": c.value, "bound": c.bound, "op": c.op, "kind": c.kind,
               "rule": is_rule(c.id, task.item.exercise)} for c in result.claims]
    inputs = result.tables[0].rows if result.tables else []
    return json_safe({
        "student": task.student, "file": task.item.file, "exercise": task.item.exercise, "found": task.found,
        "digest": task.digest, "key": task.item.key(seed, version), "score": got.score, "points": got.points,
        "how": got.how, "passed": result.exit_code == 0, "stopped": result.stopped,
        "diagnosis": result.metrics.get("diagnosis"), "notes": [task.note] * bool(task.note) + list(result.notes),
        "claims": claims,
        "inputs": [[str(r[0]), str(r[1]), r[2], str(r[3])] for r in inputs],
        "printed": result.metrics.get("printed", ""), "trace": result.metrics.get("trace", ""),
        "sandbox": result.metrics.get("sandbox", ""), "environment": result.metrics.get("environment", ""),
        "source": _source(task), "when": f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"})


SOURCE_CHARS = 20_000  # of a student's file kept in its record: the feedback shows the lines a diagnosis is about


def _source(task: Task) -> str:
    source = task.submission.source
    return source[:SOURCE_CHARS].decode("utf-8", "replace") if isinstance(source, bytes) else ""


def reusable(old: dict | None, task: Task, seed: int, version: str) -> bool:
    """Whether OLD (the record of TASK's student and file from the last run) still holds: the same bytes, course
    item, seed and gradlab, and a check that ended on its own (not one the machine ended: record["environment"])."""
    return (isinstance(old, dict) and not old.get("environment") and not _machines(old)
            and old.get("digest") == task.digest
            and old.get("key") == task.item.key(seed, version) and old.get("student") == task.student)


# how a record written before records said "environment" shows that the machine ended its check (its stopped line)
MACHINES = ("gradlab could not check this file", "gradlab could not judge your outputs", "gradlab's judging of your")


def _machines(old: dict) -> bool:
    return str(old.get("stopped") or "").startswith(MACHINES)


def kept(old: dict | None, task: Task, seed: int, version: str, only: str | None = None) -> bool:
    """Whether OLD is kept for TASK instead of grading it: it still holds (reusable), or, with ONLY (--student), it is
    another student's record."""
    if only is not None:
        return task.student != only and isinstance(old, dict) and old.get("student") == task.student
    return reusable(old, task, seed, version)


def grade_all(todo: list[Task], seed: int, version: str, old: dict[tuple[str, str], dict],
              progress: Callable[[int, int, dict, float], None], only: str | None = None
              ) -> tuple[dict[tuple[str, str], dict], int | None]:
    """{(student, file): record} for every task: OLD's records where they still hold, the others graded as many at a
    time as fit, each in its own sandbox (gradlab.practice.classroom.pool); PROGRESS(done, of, record, seconds) after
    each
    graded one. Also the number of the signal (Ctrl-C, SIGTERM) that stopped the grading, None when it ended: the
    records are then those graded before it. ONLY (--student): that student's files graded again, the others' last
    records kept."""
    records = {(t.student, t.item.file): old[(t.student, t.item.file)] for t in todo
               if kept(old.get((t.student, t.item.file)), t, seed, version, only)}
    fresh = [t for t in todo if (t.student, t.item.file) not in records]
    count = 0

    def each(index: int, result, seconds: float) -> None:
        nonlocal count
        count += 1
        task = fresh[index]
        records[(task.student, task.item.file)] = rec = record(task, result, seed, version)
        progress(count, len(fresh), rec, seconds)

    graded = pool.grade_all([t.submission for t in fresh], seed, each)
    for task, result in zip(fresh, graded.results, strict=True):  # and those that ended as the stop came
        if result is not None and (task.student, task.item.file) not in records:
            records[(task.student, task.item.file)] = record(task, result, seed, version)
    return records, graded.signum


SLUG = re.compile(r"[^A-Za-z0-9._-]+")


def slugs(names: list[str]) -> dict[str, str]:
    """A file name for each student's feedback: letters, digits, . _ - only, unique whatever the others are called. A
    bare name (one that is its own slug: alice) keeps it, unless another bare name differs from it in case only;
    every other name gets its letters and a short hash of the exact name (!alice: alice-1f0c…), so that no name
    can take another student's file name (the order of the folder's listing chooses nothing)."""
    def base(name: str) -> str:
        return SLUG.sub("_", name).strip("._") or "student"

    bare = [n for n in names if base(n) == n and len(n) <= 80]
    lowered = [n.lower() for n in bare]
    out = {n: n for n in bare if lowered.count(n.lower()) == 1}
    taken = {n.lower() for n in out}
    for name in names:
        if name in out:
            continue
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
        for size in range(8, len(digest) + 1):  # a bare name chosen to match this one's slug is not reused
            slug = f"{base(name)[:70]}-{digest[:size]}"
            if slug.lower() not in taken:
                break
        taken.add(slug.lower())
        out[name] = slug
    return {n: out[n] for n in names}
