"""The practice commands: `gradlab exercises`, `exercise` and `check`. Registered on the `gradlab` group by
cli.py; the checking itself is gradlab.practice.check (each submission runs in a process of its own)."""

from __future__ import annotations

import json

import click

from gradlab.errors import GradlabError
from gradlab.version import __version__


def installed_torch() -> str:
    """torch.__version__, without importing torch when nothing has (a check stopped by its pre-flight): read from
    torch/version.py, which is what torch.__version__ is."""
    import importlib.util
    import re
    import sys
    from pathlib import Path

    if "torch" in sys.modules:
        return sys.modules["torch"].__version__
    spec = importlib.util.find_spec("torch")
    text = Path(spec.submodule_search_locations[0], "version.py").read_text() if spec else ""
    found = re.search(r"^__version__ = '([^']+)'", text, re.M)
    return found[1] if found else "unknown"


@click.command(short_help="The exercises: the gradient code a student writes, checked by `gradlab check`.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write the list as JSON objects (name, lesson, function, level, what) to this file (- for stdout).")
def exercises(json_path: str | None) -> int:
    """Every exercise: its lesson, its name, what to write, its level. `gradlab exercise NAME` writes a starter."""
    from rich.text import Text

    from gradlab.practice import listing
    from gradlab.report.console import FittedTable, make_console
    from gradlab.report.files import check_writable, write_bytes

    items = listing()
    if json_path:
        check_writable(json_path, "--json")
        write_bytes(json_path, (json.dumps(items, indent=2, ensure_ascii=False) + "\n").encode())
        return 0
    rows = [[Text(i["lesson"], no_wrap=True), Text(i["name"], no_wrap=True), Text(i["what"]),
             Text(str(i["level"]), no_wrap=True)] for i in items]
    make_console().print(FittedTable("gradlab exercises — write one with `gradlab exercise NAME`, check it with "
                                     "`gradlab check FILE`", ["lesson", "exercise", "what to write", "level"], rows,
                                     [False, False, False, True]))
    return 0


@click.command(short_help="Write an exercise's starter file (signature, math, shapes, the check command).")
@click.argument("name")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None,
              help="The file to write (default: FUNCTION.py in the current folder).")
@click.option("--force", is_flag=True, help="Replace the file if it exists.")
@click.option("--course", "course_path", type=click.Path(dir_okay=False), default=None,
              help="A course file whose own exercises (its `own` folders) NAME may be one of.")
def exercise(name: str, out_path: str | None, force: bool, course_path: str | None) -> int:
    """Write the starter file of exercise NAME: the function to write, its math and shapes, the TF-1 line it
    replaces, a body that raises NotImplementedError, and the command that checks it."""
    import os

    from gradlab.practice import EXERCISES
    from gradlab.practice.check import starter
    from gradlab.report.files import check_writable, write_bytes

    if course_path is not None:
        read_course(course_path)  # adds the course's own exercises
    if name not in EXERCISES:
        import difflib

        close = difflib.get_close_matches(name, EXERCISES, 1)
        raise GradlabError(f"unknown exercise {name!r}" + (f"; did you mean {close[0]}?" if close else "")
                           + " (gradlab exercises lists them)")
    ex = EXERCISES[name]
    out = out_path or f"{ex.function}.py"
    if os.path.lexists(out) and not force:
        raise GradlabError(f"{out} already exists; add --force to replace it, or --out another file")
    check_writable(out, "--out")
    write_bytes(out, starter(ex).encode())
    then = f"run `gradlab check {out}`" if not ex.package else "hand it in (the checks are your teacher's)"
    click.echo(f"wrote {out}: write {ex.function}(), then {then}")
    return 0


def read_course(path: str) -> dict[str, str]:
    """A course file's {file name: exercise}, checked (gradlab.practice.course reads it, points included)."""
    return {item.file: item.exercise for item in course_items(path)}


@click.command("check", short_help="Grade a solution with the lesson's own claims, and diagnose a wrong one.")
@click.argument("path", type=click.Path())
@click.option("--exercise", "exercise_name", default=None,
              help="The exercise (default: the one the file names; a course's checks need it, or --course).")
@click.option("--course", "course_path", type=click.Path(dir_okay=False), default=None,
              help="A course file (TOML) naming the exercise of each file: [exercises] \"sgd_step.py\" = "
                   "\"mnist.sgd_step\".")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write the result (checks, claims, diagnosis, points) to this file (- for standard output).")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), default=None,
              help="Write JUnit XML (GitHub Classroom, CI): one test case per check.")
@click.option("--gradescope", "gradescope_path", type=click.Path(dir_okay=False), default=None,
              help="Write Gradescope's autograder results.json for one student: a test per exercise, its points as "
                   "the course file says (default 10, carried by the claims about the answer).")
@click.option("--seed", type=click.IntRange(0, 2**31 - 1), default=None,
              help="The seed of the generated inputs (default: 0 for your own check; a fresh random one for a "
                   "course's checks, printed and recorded, so that no submission can carry the expected answers).")
@click.option("--quiet", is_flag=True, help="Print nothing; use the exit code (and the files).")
def check_cmd(path: str, exercise_name: str | None, course_path: str | None, json_path: str | None,
              junit_path: str | None, gradescope_path: str | None, seed: int | None, quiet: bool) -> int:
    """Run PATH's function in a sandbox (time, memory and process limits) on generated inputs, edge cases included,
    compare it with the reference computed here, run the lesson's claims on its outputs, and name the mistake when
    a wrong answer matches a known one. Exit 0 when every check passes, 1 when one fails.

    PATH may be a folder of submissions (the *.py files in it, each checked on its own), summed up in one table. A
    course's checks (a folder, --junit, --gradescope) take the exercise from the teacher, --exercise NAME or --course
    FILE, never from the file's own '# gradlab-exercise:' line, and run only where submissions are isolated (as root
    with bubblewrap, or a uid of its own); a student's own check of one file runs anywhere."""
    import os
    from pathlib import Path

    from gradlab.practice import EXERCISES, grading, isolate
    from gradlab.report import console as report
    from gradlab.report.files import STDOUT, check_writable, write_bytes

    folder = os.path.isdir(path)
    course = folder or junit_path is not None or gradescope_path is not None
    if exercise_name is not None and course_path is not None:
        raise GradlabError("give --exercise or --course, not both")
    if exercise_name is not None and exercise_name not in EXERCISES:
        raise GradlabError(f"unknown exercise {exercise_name!r}; gradlab exercises lists them")
    items = course_items(course_path) if course_path else None
    files_of = {i.file: i.exercise for i in items} if items else None
    if course and exercise_name is None and files_of is None:
        what = "a folder" if folder else "--junit" if junit_path else "--gradescope"
        raise GradlabError(f"{what} grades for a course, so the exercise comes from you, not from the files: add "
                           "--exercise NAME (every file is that exercise) or --course FILE (which file is which)")
    if folder and gradescope_path is not None and exercise_name is not None:
        raise GradlabError(f"--gradescope writes one student's results.json, and each file of {path} is another "
                           f"student's: grade the class with `gradlab grade {path} --exercise {exercise_name} --out "
                           "DIR`, or check one student's file")
    if folder and files_of is not None:
        _one_submission(path, files_of)
    if not folder and not os.path.lexists(path):
        raise GradlabError(f"{path} is not a file; give the .py file that `gradlab exercise NAME` wrote")
    for target, option in ((json_path, "--json"), (junit_path, "--junit"), (gradescope_path, "--gradescope")):
        check_writable(target, option)
    found = isolate.detect()
    if course and not found.isolated:
        raise GradlabError(f"{'checking a folder' if folder else 'a course file'} grades other people's code, and "
                           f"{isolate.not_isolated_message(found)}; nothing was written")
    if course and found.mode == "uid":  # no mount namespace: what other users may read, a submission may copy
        shown = [os.path.abspath(path) if folder else os.path.dirname(os.path.abspath(path))]
        readable = isolate.readable_by_sandbox(shown + ([os.path.dirname(os.path.abspath(course_path))]
                                                        if course_path else []))
        if readable:
            raise GradlabError(f"{isolate.sanitize(readable)} is readable by other users, so a submission could "
                               f"copy it (a classmate's file, the wheel's model answers): chmod o-rwx it and its "
                               f"folder; nothing was written")
    console = report.make_console(quiet=quiet, stderr=STDOUT in (json_path, junit_path, gradescope_path))
    if found.isolated and not quiet and (note := isolate.not_isolated_message(found)):  # uid mode, or no cgroup
        console.print(f"gradlab: note: {note}", markup=False, highlight=False)
    todo = _submissions(path, folder, exercise_name, files_of, course)
    if seed is None:  # a course's inputs are drawn afresh: the inputs of seed 0 (and so their answers) are public
        import secrets

        seed = secrets.randbelow(2**31) if course else 0
    if course and not quiet:
        console.print(f"inputs drawn with seed {seed} (gradlab check … --seed {seed} draws them again)",
                      markup=False, highlight=False)
    results, signum = _graded(todo, seed)
    # torch is not imported before the checks: each starts its submission's process first, so that both processes
    # import torch at the same time (and a syntax error is reported without importing it at all)
    torch_version = installed_torch()
    for result in results:
        result.torch, result.version, result.device = torch_version, __version__, "cpu"
        result.threads, result.threads_why = 1, "the submission runs on one thread"
        checks = grading.points(result)
        result.metrics["points"] = {"score": sum(t["score"] for t in checks), "max_score": len(checks)}
        if not folder:
            report.render(result, console)
            if result.metrics.get("trace"):
                console.print("your traceback (the frames of your own file):", style="dim")
                console.print(result.metrics["trace"], markup=False, highlight=False)
            if result.metrics.get("sandbox") == "plain":
                console.print(f"not isolated: your code ran as you, in a plain process ({found.why}); fine for "
                              "your own code", style="dim", markup=False, highlight=False)
    if folder:
        from gradlab.kit.result import Table

        rows = [[Path(r.config["file"]).name, r.metrics["exercise"], r.metrics["points"]["score"],
                 r.metrics["points"]["max_score"], "passed" if r.exit_code == 0 else
                 (r.stopped or r.metrics.get("diagnosis", "a check failed"))] for r in results]
        console.print(report.render_table(Table(f"gradlab check {isolate.sanitize(path)}: "
                                                f"{sum(r.exit_code == 0 for r in results)} of {len(results)} "
                                                "submissions pass", ["file", "exercise", "points", "of", "verdict"],
                                                rows)))
    data = [r.to_json() | {"points": r.metrics["points"]} for r in results]
    outputs = ((json_path, lambda: json.dumps(data[0] if not folder else data, indent=2, ensure_ascii=False,
                                              allow_nan=False) + "\n"),
               (junit_path, lambda: grading.junit(results)),
               (gradescope_path, lambda: grading.gradescope(results, [_scored(r, items) for r in results])))
    for target, text in outputs:
        if target:
            write_bytes(target, text().encode())
            if target != STDOUT:
                console.print(f"wrote {isolate.sanitize(target)}", markup=False)
    if signum is not None:  # what was graded is written: now the stop that Ctrl-C or SIGTERM asked for
        from gradlab.cli import process

        raise process.Interrupted(signum)
    return 0 if all(r.exit_code == 0 for r in results) else 1


def _graded(todo: list[tuple], seed: int) -> tuple[list, int | None]:
    """Each of TODO's Results, two submissions at a time (each in its own sandbox), in TODO's order, and None; on
    Ctrl-C or SIGTERM (a KeyboardInterrupt here), at once: every sandbox killed, the files not graded said so, and
    the signal's number. The threads are daemons: a check in progress never holds gradlab's exit."""
    import contextlib
    import queue
    import threading

    from gradlab.practice import isolate
    from gradlab.practice.check import stopped_result

    jobs: queue.SimpleQueue = queue.SimpleQueue()
    for i, item in enumerate(todo):
        jobs.put((i, item))
    done: dict[int, object] = {}
    finished = threading.Semaphore(0)

    def work() -> None:
        while True:
            try:
                i, item = jobs.get_nowait()
            except queue.Empty:
                return
            done[i] = _checked(item, seed)
            finished.release()

    for _ in range(min(2, len(todo))):
        threading.Thread(target=work, daemon=True).start()
    try:
        for _ in todo:
            finished.acquire()
        return [done[i] for i in range(len(todo))], None
    except KeyboardInterrupt as e:
        graded = dict(done)  # before the kill: the checks it stops midway are not graded
        with contextlib.suppress(queue.Empty):
            while True:  # the workers take nothing more
                jobs.get_nowait()
        isolate.stop_all()
        why = "not graded: gradlab was stopped before this file's check ended"
        return [graded[i] if i in graded else stopped_result(item[2], item[0], why, "died", seed)
                for i, item in enumerate(todo)], getattr(e, "signum", 2)


def course_items(path: str) -> list:
    """A course file's items: which file is which exercise, and its points (gradlab.practice.course)."""
    from gradlab.practice import course

    return course.read(path)


def _scored(result, items: list | None):
    """RESULT's points as its course item says (by its file's name), or as an exercise's default: 10 points that
    the claims about the answer carry, each broken rule deducting a quarter."""
    import os

    from gradlab.practice.course import Item, score

    exercise = result.metrics["exercise"]
    item = next((i for i in items or [] if i.file == os.path.basename(str(result.config.get("file", "")))), None)
    return score(result, item or Item(f"{exercise.rpartition('.')[2]}.py", exercise))


def _one_submission(path: str, files_of: dict[str, str]) -> None:
    """A folder checked with --course is one student's submission: one that holds none of the course's files but
    folders (one per student, as an LMS download or GitHub Classroom clones are) is a class, for `gradlab grade`."""
    import os

    try:
        names = os.listdir(path)
    except OSError:
        return  # said by _submissions
    folders = [n for n in names if not n.startswith(".") and os.path.isdir(os.path.join(path, n))]
    if folders and not set(files_of) & set(names):
        raise GradlabError(f"{path} holds folders ({', '.join(sorted(folders)[:2])}, …) and none of the course's "
                           f"files: a folder per student is a class; grade it with `gradlab grade {path} --course "
                           "FILE --out DIR`")


def _submissions(path: str, folder: bool, exercise_name: str | None, files_of: dict[str, str] | None,
                 course: bool) -> list[tuple]:
    """What to check: (the name shown, the file's path or None when it is missing, the exercise, why it cannot run
    or None, whether it is the student's own check: links followed, the file's marker not compared). A course's
    files are read without following links; its exercise is the teacher's, and a file whose marker names another
    one fails, it is not switched."""
    import os

    from gradlab.practice import EXERCISES, isolate

    if not folder:
        from gradlab.practice.sandbox import read_submission

        try:
            read_submission(path, follow=not course)
        except (OSError, ValueError) as e:
            raise GradlabError(f"cannot read {isolate.sanitize(path)}: {getattr(e, 'strerror', None) or e}") from None
        base = os.path.basename(path)
        if files_of is not None and base not in files_of:
            raise GradlabError(f"{path}: the course file names no exercise for {base}; it lists "
                               f"{', '.join(sorted(files_of))}")
        name = exercise_name or (files_of[base] if files_of else None)
        if name is None:
            from gradlab.practice.check import exercise_of

            return [(isolate.sanitize(path), path, exercise_of(path, None), None, True)]
        return [(isolate.sanitize(path), path, EXERCISES[name], None, not course)]
    try:
        names = sorted(os.listdir(path))
    except OSError as e:
        raise GradlabError(f"cannot list {path}: {e.strerror}") from None
    if files_of is not None:
        todo = [(n, os.path.join(path, n) if n in names else None, EXERCISES[e], None if n in names else
                 f"{n} is missing from this submission", False) for n, e in sorted(files_of.items())]
    else:
        names = [n for n in names if n.endswith(".py")]
        alike: dict[str, list[str]] = {}  # two files no one can tell apart in a table of grades: neither is graded
        for n in names:
            alike.setdefault(isolate.looks_alike(n), []).append(n)
        todo = [(isolate.sanitize(n), os.path.join(path, n), EXERCISES[exercise_name], _alike(n, alike), False)
                for n in names]
    if not todo:
        raise GradlabError(f"{path} has no .py files to check")
    return todo


def _alike(name: str, alike: dict[str, list[str]]) -> str | None:
    from gradlab.practice import isolate

    others = [isolate.sanitize(m) for m in alike[isolate.looks_alike(name)] if m != name]
    return f"its name looks like {' and '.join(others)}: rename one of them" if others else None


def _checked(item: tuple, seed: int = 0, source: bytes | None = None):
    """One submission's Result: never an exception (one file's trouble never stops a class's grading). SOURCE: the
    bytes to grade, read (and hashed) by the caller; the path is then not read again."""
    shown, path, exercise, why, follow = item
    from gradlab.practice.check import marker, run_check, stopped_result
    from gradlab.practice.isolate import one_line
    from gradlab.practice.sandbox import read_submission

    if why is not None:
        return stopped_result(exercise, shown, why, "missing", seed)
    try:
        source = read_submission(path, follow=follow) if source is None else source
    except (OSError, ValueError) as e:
        return stopped_result(exercise, shown, f"cannot read {shown}: {getattr(e, 'strerror', None) or e}",
                              seed=seed)
    named = marker(source)
    if not follow and named is not None and named != exercise.name:
        return stopped_result(exercise, shown, f"this file says it is {one_line(named, 80)} (its '# gradlab-exercise:'"
                                               f" line) but is graded as {exercise.name}: fix that line, or hand in "
                                               "the file of this exercise", "missing", seed)
    try:
        return run_check(shown, exercise, seed=seed, source=source)
    except Exception as e:  # gradlab's own trouble with this one file: said, and the others go on
        why = one_line(f"{type(e).__name__}: {e}", 200)
        return stopped_result(exercise, shown, f"gradlab could not check this file: {why}", seed=seed)
