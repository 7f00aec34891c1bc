"""`gradlab grade SUBMISSIONS --course course.toml --out DIR`: a class graded in one command, as `otter grade` and
`nbgrader autograde` do. The command and its options are gradlab.cli.student; the finding, grading and keeping is
gradlab.practice.classroom.gradebook, the writing gradlab.practice.classroom.feedback."""

from __future__ import annotations

import datetime
import json
import os
import secrets
import sys
from dataclasses import asdict, dataclass

from gradlab.errors import GradlabError, Interrupted
from gradlab.kit.text import sanitize
from gradlab.practice import all_exercises
from gradlab.practice.classroom import adjust, course, feedback, gradebook, lms, own, shards
from gradlab.practice.judging.judge import installed_torch
from gradlab.practice.sandbox import capacity, modes
from gradlab.report import console as report
from gradlab.report.files import write_bytes
from gradlab.version import __version__

RESULTS = shards.RESULTS


def grade_class(submissions: str, *, course_path: str | None, exercise_name: str | None, out_dir: str,
                seed: int | None, quiet: bool, shard: shards.Shard | None = None, student: str | None = None) -> int:
    """`gradlab grade`: every student in SUBMISSIONS graded (with SHARD, its part of them:
    gradlab.practice.classroom.shards), and grades.csv, the feedback, class.html and results.json written in OUT_DIR.
    STUDENT: that student's files graded again, every other student's kept from the last run (graded when it has
    none). Exit code 0 when the class was graded, 1 when the machine kept some files from being graded."""
    items = _items(course_path, exercise_name)
    overrides = adjust.read_overrides(course_path, items)  # a bad row: one line before anything is graded
    times = adjust.read_times(course_path)
    found = _isolation(submissions, course_path, out_dir)
    found_class = _find(submissions, items, exercise_name is not None, out_dir, shard, student)
    todo = found_class.todo
    sources: dict[str, str] = {}
    marked = _when(items, found_class.folders, times, sources)
    say = _sayer(quiet)
    shown = found_class.notes + _notes(found, items, quiet)  # every note: on the terminal and class.html
    for note in shown:
        say(f"gradlab: note: {note}")
    old, old_seed, old_slugs = _previous(out_dir, say)
    seed = _seed(seed, old_seed, shard)
    for note in own.ready([i.exercise for i in items], seed, f"--course {course_path}"):  # before any student's file
        say(f"gradlab: note: {note}")
        shown.append(note)
    _prepare(out_dir, private=found.mode == "uid")
    digest = course.own_digest(course_path)
    stamp = __version__ + (f"+own.{digest}" if digest else "")  # what a re-run compares, beside each file's bytes
    table, signum = _gradebook(todo, old, seed, stamp, say, lambda done: _save(out_dir, seed, old_slugs, done),
                               student)
    now = f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"
    applied = adjust.apply(table, items, overrides, times, sources, now)
    for note in [*applied.notes, adjust.unknown_lateness([s for s in marked if s in table], items),
                 adjust.pin(course_path, applied.pins)]:
        if note:
            say(f"gradlab: note: {note}")
            shown.append(note)
    made = f"graded {now} by gradlab {__version__} (torch {installed_torch()}), inputs drawn with seed {seed}"
    source = course_path or f"--exercise {exercise_name}"
    if signum is not None:  # what was graded in full is written, said so on every page; results.json keeps the rest
        students = len({t.student for t in todo})
        made = f"PARTIAL: {len(table)} of {students} students graded in full (the run was stopped); " + made
        written = _write(out_dir, items, table, seed, made, old_slugs, source, partial=True, notes=shown)
        say(f"gradlab: stopped: wrote a partial set in {sanitize(out_dir)} ({', '.join(written)}): "
            f"{len(table)} of {students} students graded in full, the others left out; run the same command again "
            "to grade the rest")
        raise Interrupted(signum)
    order = found_class.order
    part = {} if shard is None else {"shard": shard.label(), "source": source, "notes": shown,
                                     "order": {s: order[s] for s in table}}  # what --merge needs
    written = _write(out_dir, items, table, seed, made, old_slugs, source, part, notes=shown)
    say(f"wrote {sanitize(out_dir)}: {', '.join(written)}"
        + (f" (part {shard} of the class: {len(table)} of {len(order)} students)" if shard else ""))
    return _environment_note(table)


@dataclass(frozen=True)
class _Class:
    """What SUBMISSIONS holds: the files to grade (TODO, a shard's part of them), each student's first folder or file
    (FOLDERS), lines for the teacher (NOTES), and each student's place in the whole class (ORDER: --merge's)."""

    todo: list[gradebook.Task]
    folders: dict[str, str]
    notes: list[str]
    order: dict[str, int]


def _isolation(submissions: str, course_path: str | None, out_dir: str) -> modes.Detected:
    """The sandbox's mode, or one line and nothing written: SUBMISSIONS not a folder, or what
    modes.for_others_code refuses (no isolation here; the uid fallback beside the class's folder, the course file's
    (a teacher's own exercise's checks.py lives there) or the output folder readable by other users)."""
    if not os.path.isdir(submissions):
        raise GradlabError(f"{submissions} is not a folder; give the folder of submissions (one per student)")
    folders = [os.path.abspath(submissions)]
    if course_path is not None:
        folders.append(os.path.dirname(os.path.abspath(course_path)))
    if os.path.isdir(out_dir):
        folders.append(os.path.abspath(out_dir))
    return modes.for_others_code("grading a class", folders)


def _find(submissions: str, items: list[course.Item], by_file: bool, out_dir: str, shard: shards.Shard | None,
          student: str | None) -> _Class:
    """The class in SUBMISSIONS (gradebook.tasks); --student STUDENT must be one of it; SHARD keeps its part."""
    notes: list[str] = []
    folders: dict[str, str] = {}
    todo = gradebook.tasks(submissions, items, by_file=by_file, skip=out_dir, notes=notes, folders=folders)
    if student is not None and student not in folders:
        raise GradlabError(f"--student {sanitize(student)}: no such student in {submissions} (a student is a "
                           "folder's name, as grades.csv shows it); nothing was written")
    order = {s: n for n, s in enumerate(dict.fromkeys(t.student for t in todo))}  # the whole class's
    if shard is not None:
        todo = [t for t in todo if shard.holds(t.student)]
    return _Class(todo, folders, notes, order)


def _when(items: list[course.Item], folders: dict[str, str], times: dict[str, datetime.datetime],
          sources: dict[str, str]) -> list[str]:
    """Adds to TIMES (submitted.csv's), when an exercise is due, a Classroom clone's last commit where it has none,
    and to SOURCES where each time came from; returns the students whose Canvas files are marked LATE and who have no
    time (no download says when: gradlab.practice.classroom.lms)."""
    if any(i.due for i in items):
        commits = {s: t for s, path in folders.items() if s not in times and (t := adjust.commit_time(path))}
        sources |= {s: adjust.GIT for s in commits}
        times |= commits
    sources |= {s: f"{adjust.SUBMITTED}; Canvas marked the file LATE" for s, path in folders.items()
                if s in times and s not in sources and lms.late_marked(path)}
    return [s for s, path in folders.items() if s not in times and lms.late_marked(path)]


def _sayer(quiet: bool):
    """say(TEXT): TEXT printed as it is (no markup) on the console report.make_console(quiet=QUIET) makes."""
    console = report.make_console(quiet=quiet)

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False, soft_wrap=True)

    return say


def _notes(found: modes.Detected, items: list[course.Item], quiet: bool) -> list[str]:
    """What the teacher reads before grading: how the sandbox is bounded where it is weaker (as check says it), and
    each graded exercise that a student's own gradlab answers."""
    notes = [note] if not quiet and (note := modes.not_isolated_message(found, capacity.limits(found.mode))) else []
    return notes + list(filter(None, map(course.lesson_answer_note, dict.fromkeys(i.exercise for i in items))))


def _seed(seed: int | None, old_seed: int | None, shard: shards.Shard | None) -> int:
    """--seed, else the last run's, else a new one; a shard needs one given (every part draws the same inputs)."""
    if shard is not None and seed is None and old_seed is None:
        raise GradlabError(f"--shard {shard} needs --seed N: every part of a class must draw its inputs from the same "
                           "seed (choose one number and give it to each part); nothing was written")
    return seed if seed is not None else old_seed if old_seed is not None else secrets.randbelow(2**31)


def merge_parts(parts: list[str], out_dir: str, quiet: bool) -> int:
    """`gradlab grade --merge PART... --out OUT`: the parts of one class (gradlab.practice.classroom.shards) written
    into OUT
    as one run over the whole class would have written them."""
    whole = shards.merged(parts)
    _prepare(out_dir)
    _, _, old_slugs = _previous(out_dir, lambda line: None)
    written = _write(out_dir, whole.items, whole.table, whole.seed, whole.made, old_slugs, whole.source,
                     notes=whole.notes)
    if not quiet:
        print(f"wrote {sanitize(out_dir)}: {', '.join(written)} (from {whole.parts} parts)")
    return _environment_note(whole.table)


def _environment_note(table: dict[str, dict[str, dict]]) -> int:
    """One line on stderr when checks ended because of the machine (record["environment"]: gradlab could not check
    the file, its sandbox killed from outside or not started in time): their records are not grades, the next run
    grades them again. Exit code 1 then (the gradebook holds 0 for them), else 0."""
    trouble = [f"{rec['student']}/{rec['file']}" for recs in table.values() for rec in recs.values()
               if rec.get("environment")]
    if not trouble:
        return 0
    first = next(rec["environment"] for recs in table.values() for rec in recs.values() if rec.get("environment"))
    print(f"gradlab: {len(trouble)} file{'' if len(trouble) == 1 else 's'} could not be graded because of this "
          f"machine, not the students' code ({', '.join(trouble[:3])}{', …' if len(trouble) > 3 else ''}: {first}); "
          "they score 0 in this gradebook, are marked \"environment\" in results.json, and the next run of the same "
          "command grades them again", file=sys.stderr)
    return 1


CHECKPOINT = 4  # results.json is saved after every this many graded files: an interrupted run resumes from there


def _gradebook(todo: list[gradebook.Task], old: dict, seed: int, stamp: str, say, save, only: str | None = None
               ) -> tuple[dict[str, dict[str, dict]], int | None]:
    """({student: {file: record}}, None): the last run's records that still hold, the others graded, a line each; what
    is done so far SAVE()d every few files. When Ctrl-C or SIGTERM stops the grading: what is saved then, the students
    graded in full, and the signal's number (the next run grades the rest). STAMP: gradlab's version, and the digest
    of the course's own exercises when it has any: a record made under another is graded again. ONLY (--student):
    that student's files graded again, the others' last records kept whatever changed."""
    # what a checkpoint saves: the last run's records that still hold, then each file as it is graded
    done = {(t.student, t.item.file): old[(t.student, t.item.file)] for t in todo
            if gradebook.kept(old.get((t.student, t.item.file)), t, seed, stamp, only)}
    kept = len(done)
    plan = capacity.plan(modes.detect().mode)  # what gradlab is given: how many at a time, and what bounded it
    say(f"grading {len(todo) - kept} files of {len({t.student for t in todo})} students with seed {seed}"
        + (f" ({kept} unchanged since the last run, kept)" if kept else "")
        + f", {plan.at_once} at a time ({plan.why})")

    def progress(count: int, of: int, rec: dict, seconds: float) -> None:
        say(f"[{count}/{of}] {rec['student']}/{rec['file']}: {feedback.fmt(rec['score'])} of "
            f"{feedback.fmt(rec['points'])} ({seconds:.1f} s)")
        done[(rec["student"], rec["file"])] = rec
        if count % CHECKPOINT == 0 and count < of:
            save(dict(done))

    records, signum = gradebook.grade_all(todo, seed, stamp, old, progress, only)
    if signum is not None:
        save(records)
    whole = [s for s in dict.fromkeys(t.student for t in todo)
             if all((s, t.item.file) in records for t in todo if t.student == s)]
    return {s: {t.item.file: records[(s, t.item.file)] for t in todo if t.student == s} for s in whole}, signum


def _save(out_dir: str, seed: int, slugs: dict, records: dict[tuple[str, str], dict]) -> None:
    """results.json with the records graded so far (the class's other files are written at the end)."""
    students: dict[str, dict] = {}
    for (student, file), rec in records.items():
        students.setdefault(student, {})[file] = rec
    data = {"gradlab": __version__, "partial": True, "seed": seed, "feedback": slugs, "students": students}
    write_bytes(os.path.join(out_dir, RESULTS), (json.dumps(data, ensure_ascii=False, allow_nan=False) + "\n").encode())


def _items(course_path: str | None, exercise_name: str | None) -> list[course.Item]:
    """The course's items: from --course, or the one --exercise names (10 points, scored by its claims)."""
    if (course_path is None) == (exercise_name is None):
        raise GradlabError("give --course FILE (which file is which exercise, and its points) or --exercise NAME "
                           "(one exercise per student), one of the two")
    if course_path is not None:
        return course.read(course_path)
    if exercise_name not in all_exercises():
        raise GradlabError(f"unknown exercise {exercise_name!r}; gradlab exercises lists them")
    return [course.Item(f"{all_exercises()[exercise_name].function}.py", exercise_name)]


def _prepare(out_dir: str, private: bool = False) -> None:
    """DIR and DIR/feedback exist and are writable, or one line says why. PRIVATE (the uid fallback): a DIR made
    here is readable by its owner alone."""
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise GradlabError(f"--out {out_dir} is a file; give a folder (it is made if missing)")
    parent = os.path.dirname(os.path.abspath(out_dir))
    if not os.path.isdir(parent):
        raise GradlabError(f"--out {out_dir}: folder {parent} does not exist; create it or choose another path")
    try:
        if private and not os.path.exists(out_dir):
            os.mkdir(out_dir, 0o700)
            os.chmod(out_dir, 0o700)
        os.makedirs(os.path.join(out_dir, "feedback"), exist_ok=True)
    except OSError as e:
        raise GradlabError(f"--out {out_dir}: cannot make it ({e.strerror}); choose another path") from None
    if not os.access(out_dir, os.W_OK) or not os.access(os.path.join(out_dir, "feedback"), os.W_OK):
        raise GradlabError(f"--out {out_dir}: not writable; choose another folder")


def _previous(out_dir: str, say) -> tuple[dict, int | None, dict]:
    """The last run's records {(student, file): record}, its seed and its feedback file names, from DIR's
    results.json; nothing when there is none (or it is not one of ours: then everything is graded again)."""
    path = os.path.join(out_dir, RESULTS)
    if not os.path.exists(path):
        return {}, None, {}
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        students = data["students"]
        old = {(s, file): rec for s, recs in students.items() for file, rec in recs.items()}
        seed = data["seed"] if isinstance(data["seed"], int) else None
        return old, seed, dict(data.get("feedback", {}))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        say(f"gradlab: note: {path} is not a results.json of gradlab grade; every file is graded again")
        return {}, None, {}


def _write(out_dir: str, items, table: dict, seed: int, made: str, old_slugs: dict, source: str,
           part: dict | None = None, partial: bool = False, notes: list[str] | None = None) -> list[str]:
    """Every output file, each written atomically; feedback files of students no longer in the class removed. PART:
    what a shard's results.json holds besides (gradlab.practice.classroom.shards). PARTIAL (a stopped run):
    results.json (saved
    already, with every record) and the other students' feedback are left as they are."""
    slug = gradebook.slugs(list(table))
    for student, recs in table.items():
        base = os.path.join(out_dir, "feedback", slug[student])
        write_bytes(base + ".md", feedback.feedback_md(student, items, recs).encode())
        write_bytes(base + ".html", feedback.feedback_html(student, items, recs).encode())
    for gone in set() if partial else set(old_slugs.values()) - set(slug.values()):
        for ext in (".md", ".html"):
            path = os.path.join(out_dir, "feedback", os.path.basename(str(gone)) + ext)
            if os.path.isfile(path) and not os.path.islink(path):
                os.unlink(path)
    write_bytes(os.path.join(out_dir, "grades.csv"), feedback.grades_csv(items, table).encode())
    write_bytes(os.path.join(out_dir, "canvas.csv"), feedback.canvas_csv(items, table).encode())
    title = f"gradlab grade: {source}"
    write_bytes(os.path.join(out_dir, "class.html"), feedback.class_html(title, items, table, slug, made,
                                                                                   notes or []).encode())
    if partial:
        return ["grades.csv", "canvas.csv", "class.html", f"feedback/ ({len(table)} students)"]
    data = {"gradlab": __version__, "made": made, "seed": seed, "course": [asdict(i) for i in items],
            "feedback": slug, "students": table, **(part or {})}
    write_bytes(os.path.join(out_dir, RESULTS), (json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False)
                                                 + "\n").encode())
    return ["grades.csv", "canvas.csv", "class.html", RESULTS, f"feedback/ ({len(table)} students, .md and .html)"]
