"""What `gradlab exercises`, `exercise` and `check` do; their click commands and options are gradlab.cli.student.

`gradlab check PATH` reads each file once into a Submission (gradlab.practice.judging.submission), grades them as many
at a
time as fit (gradlab.practice.classroom.pool: each in a sandbox of its own) and reports the Results: a file's checks,
or a
folder's table, and the course files (--json, --junit, --gradescope)."""

from __future__ import annotations

import difflib
import json
import os
import secrets

from rich.text import Text

from gradlab.errors import GradlabError, Interrupted
from gradlab.kit.result import Column, Result, Table
from gradlab.kit.text import sanitize
from gradlab.practice import all_exercises, checks_of, listing
from gradlab.practice.classroom import course, course_files, own, pool
from gradlab.practice.classroom.starter import starter
from gradlab.practice.judging import submission
from gradlab.practice.judging.check import graphs as check_graphs
from gradlab.practice.judging.check import stopped_result
from gradlab.practice.sandbox import capacity, modes
from gradlab.report import console as report
from gradlab.report.files import STDOUT, check_graph_suffix, check_writable, write_bytes


def list_exercises(json_path: str | None, *, course_path: str | None = None) -> int:
    """`gradlab exercises`: the table of every exercise, or the list as JSON in JSON_PATH (- for standard output);
    with COURSE_PATH, the course's own exercises too (course.read adds them)."""
    if course_path is not None:
        course.read(course_path)
    items = listing()
    if json_path:
        check_writable(json_path, "--json")
        write_bytes(json_path, (json.dumps(items, indent=2, ensure_ascii=False) + "\n").encode())
        return 0
    rows = [[Text(i["lesson"], no_wrap=True), Text(i["name"], no_wrap=True), Text(i["what"]),
             Text(str(i["level"]), no_wrap=True)] for i in items]
    table = report.FittedTable(
        "gradlab exercises — write one with `gradlab exercise NAME`, check it with `gradlab check FILE`",
        ["lesson", "exercise", "what to write", "level"], rows, [False, False, False, True])
    console = report.make_console()
    if not console.is_terminal and "COLUMNS" not in os.environ:  # a pipe or a file: rich's 80 columns wrapped
        console.width = sum(table.widths()[0]) + 3 * len(rows[0]) + 1  # every "what to write": a row a line
    console.print(table)
    return 0


def write_starter(name: str, *, out_path: str | None, force: bool, course_path: str | None) -> str:
    """`gradlab exercise NAME`: exercise NAME's starter file written (to OUT_PATH, default FUNCTION.py; a course's
    own exercises are known with COURSE_PATH); the line that says what to do next."""
    items = course.read(course_path) if course_path is not None else []  # adds the course's own exercises
    if name not in all_exercises():
        close = difflib.get_close_matches(name, all_exercises(), 1)
        raise GradlabError(f"unknown exercise {name!r}" + (f"; did you mean {close[0]}?" if close else "")
                           + " (gradlab exercises lists them)")
    exercise = all_exercises()[name]
    expected = next((os.path.basename(i.file) for i in items if i.exercise == name), None)  # the course's file name
    out = out_path or expected or f"{exercise.function}.py"
    if os.path.lexists(out) and not force:
        raise GradlabError(f"{out} already exists; add --force to replace it, or --out another file")
    check_writable(out, "--out")
    write_bytes(out, starter(exercise, expected or os.path.basename(out)).encode())
    then = f"run `gradlab check {out}`" if not exercise.package else "hand it in (the checks are your teacher's)"
    return f"wrote {out}: write {exercise.function}(), then {then}"


def check(path: str, *, exercise_name: str | None = None, course_path: str | None = None,
          json_path: str | None = None, junit_path: str | None = None, gradescope_path: str | None = None,
          classroom_path: str | None = None, seed: int | None = None, quiet: bool = False,
          graph_path: str | None = None) -> int:
    """`gradlab check PATH`: a file or a folder of submissions graded; exit code 0 when every check passes, 1 when
    one fails. A course's checks (a folder, --junit, --gradescope, --classroom) take the exercise from --exercise or
    --course, never from the files, and run only isolated."""
    folder = os.path.isdir(path)
    one_student = {"--gradescope": gradescope_path, "--classroom": classroom_path}  # one student's file, a course's
    course_check = folder or junit_path is not None or any(p is not None for p in one_student.values())
    items = _course(path, folder=folder, course_check=course_check, exercise_name=exercise_name,
                    course_path=course_path, junit_path=junit_path, one_student=one_student)
    for target, option in ((json_path, "--json"), (junit_path, "--junit"), *((p, o) for o, p in one_student.items())):
        check_writable(target, option)
    if graph_path is not None:
        if folder:
            raise GradlabError(f"--graph draws one file's backward pass; {path} is a folder: give one of its files")
        check_graph_suffix(graph_path)
        check_writable(graph_path, "--graph")
    found = _isolation(path, folder=folder, course_check=course_check, course_path=course_path)
    console = report.make_console(quiet=quiet, stderr=STDOUT in (json_path, junit_path, gradescope_path,
                                                                 classroom_path))
    if found.isolated and not quiet and (note := modes.not_isolated_message(found, capacity.limits(found.mode))):
        console.print(f"gradlab: note: {note}", markup=False, highlight=False)
    files_of = {i.file: i.exercise for i in items} if items else None
    todo = (submission.of_folder(path, exercise_name=exercise_name, files_of=files_of) if folder else
            [submission.of_file(path, exercise_name=exercise_name, files_of=files_of, course_check=course_check)])
    if graph_path is not None:
        _drawable(todo[0])
    if seed is None:  # a course's inputs are drawn afresh: the inputs of seed 0 (and so their answers) are public
        seed = secrets.randbelow(2**31) if course_check else 0
    if course_check and not quiet:
        console.print(f"inputs drawn with seed {seed} (gradlab check … --seed {seed} draws them again)",
                      markup=False, highlight=False)
    for note in own.ready([i.exercise for i in items or []], seed, f"--course {course_path}"):  # a teacher's own
        if not quiet:
            console.print(f"gradlab: note: {note}", markup=False, highlight=False)
    graded = pool.grade_all(todo, seed)
    why = "not graded: gradlab was stopped before this file's check ended"
    results = [r if r is not None else stopped_result(s.exercise, s.shown, why, seed)
               for s, r in zip(todo, graded.results, strict=True)]
    if folder:
        table = _class_table(path, results, items)
        console.print(report.render_table(table))
    else:
        _show(results[0], console, found)
        _graph(todo[0], results[0], seed, graph_path, console)
    _write(results, items, console, folder=folder, json_path=json_path, junit_path=junit_path,
           gradescope_path=gradescope_path, classroom_path=classroom_path)
    if graded.signum is not None:  # what was graded is written: now the stop that Ctrl-C or SIGTERM asked for
        raise Interrupted(graded.signum)
    return 0 if all(r.exit_code == 0 for r in results) else 1


def _course(path: str, *, folder: bool, course_check: bool, exercise_name: str | None, course_path: str | None,
            junit_path: str | None, one_student: dict[str, str | None]) -> list[course.Item] | None:
    """The course file's items (None without --course), once the options are known to fit PATH: a course's check
    names its exercise, --gradescope and --classroom (ONE_STUDENT: option → path) are one student's, a file to check
    exists."""
    if exercise_name is not None and course_path is not None:
        raise GradlabError("give --exercise or --course, not both")
    if exercise_name is not None and exercise_name not in all_exercises():
        raise GradlabError(f"unknown exercise {exercise_name!r}; gradlab exercises lists them")
    items = course.read(course_path) if course_path else None
    if course_check and exercise_name is None and items is None:
        given = [o for o, p in one_student.items() if p is not None]
        what = "a folder" if folder else "--junit" if junit_path else given[0]
        raise GradlabError(f"{what} grades for a course, so the exercise comes from you, not from the files: add "
                           "--exercise NAME (every file is that exercise) or --course FILE (which file is which)")
    for option, target in one_student.items():
        if folder and target is not None and exercise_name is not None:
            what = "results.json" if option == "--gradescope" else "result"
            raise GradlabError(f"{option} writes one student's {what}, and each file of {path} is another "
                               f"student's: grade the class with `gradlab grade {path} --exercise {exercise_name} "
                               "--out DIR`, or check one student's file")
    if folder and items is not None:
        _one_submission(path, {i.file for i in items})
    if not folder and not os.path.lexists(path):
        raise GradlabError(f"{path} is not a file; give the .py file that `gradlab exercise NAME` wrote")
    return items


def _isolation(path: str, *, folder: bool, course_check: bool, course_path: str | None) -> modes.Detected:
    """How submissions run here; a course's check runs them only as modes.for_others_code allows."""
    if not course_check:
        return modes.detect()
    shown = [os.path.abspath(path) if folder else os.path.dirname(os.path.abspath(path))]
    course_folder = [os.path.dirname(os.path.abspath(course_path))] if course_path else []
    return modes.for_others_code("checking a folder" if folder else "a course file", shown + course_folder)


def _one_submission(path: str, files: set[str]) -> None:
    """A folder checked with --course is one student's submission: one that holds none of the course's FILES but
    folders (one per student, as an LMS download or GitHub Classroom clones are) is a class, for `gradlab grade`."""
    try:
        names = os.listdir(path)
    except OSError:
        return  # said by submission.of_folder
    folders = [n for n in names if not n.startswith(".") and os.path.isdir(os.path.join(path, n))]
    if folders and not files & set(names):
        raise GradlabError(f"{path} holds folders ({', '.join(sorted(folders)[:2])}, …) and none of the course's "
                           f"files: a folder per student is a class; grade it with `gradlab grade {path} --course "
                           "FILE --out DIR`")


def _show(result: Result, console, found: modes.Detected) -> None:
    """One file's Result: its checks, the student's traceback, and whether it ran isolated."""
    report.render(result, console)
    if result.metrics.get("trace"):
        console.print("your traceback (the frames of your own file):", style="dim")
        console.print(result.metrics["trace"], markup=False, highlight=False)
    if result.metrics.get("sandbox") == "plain":
        console.print(f"not isolated: your code ran as you, in a plain process ({found.why}); fine for your own "
                      "code", style="dim", markup=False, highlight=False)


def _drawable(todo: submission.Submission) -> None:
    """--graph draws one process's backward pass: an exercise whose harness runs the function in gloo worker
    processes has none, and says so before anything runs (exit 2)."""
    if todo.stop is None and checks_of(all_exercises()[todo.exercise.name]).harness.prepare is not None:
        raise GradlabError(f"--graph draws the backward pass of one process; {todo.exercise.name} calls your "
                           f"{todo.exercise.function}() in gloo worker processes, one per rank, so there is no one "
                           f"graph to draw: check it without --graph")


def _graph(todo: submission.Submission, result: Result, seed: int, graph_path: str | None, console) -> None:
    """--graph: the submission's backward pass beside the reference's, written to GRAPH_PATH; without it, a check
    that failed says how to get it."""
    if graph_path is None:
        if result.exit_code == 1 and todo.kind == "source" and not getattr(todo.exercise, "no_autograd", True) \
                and not getattr(todo.exercise, "on_workers", False):
            console.print(f"see where your gradient goes wrong: gradlab check {todo.shown} --graph "
                          f"{os.path.splitext(os.path.basename(todo.shown))[0]}.html", style="dim", markup=False,
                          highlight=False, soft_wrap=True)  # a command is never broken across lines
        return
    from gradlab.report.graph import write_graph  # grandalf

    try:
        graphs = check_graphs(todo, seed)
    except GradlabError as e:
        console.print(f"gradlab: {e}", markup=False, highlight=False)
        return
    write_graph(graph_path, graphs, f"gradlab check {todo.shown}: your backward pass beside the reference's",
                console, side_by_side=True)


def _class_table(path: str, results: list[Result], items: list[course.Item] | None) -> Table:
    """A folder's Results, a row per file: its exercise, points and verdict. The points are the course's (ITEMS, or an
    exercise's default: _scored), the numbers --gradescope and --classroom hand on, not one per check: a Classroom log
    that read "4 of 5" beside a result of 0 of 10 contradicted the grade (#44)."""
    scores = [_scored(r, items) for r in results]
    rows = [[os.path.basename(r.config["file"]), r.metrics["exercise"], fmt_points(s.score), fmt_points(s.points),
             "passed" if r.exit_code == 0 else (r.stopped or r.metrics.get("diagnosis", "a check failed"))]
            for r, s in zip(results, scores, strict=True)]
    return Table(f"gradlab check {sanitize(path)}: {sum(r.exit_code == 0 for r in results)} of "
                 f"{len(results)} submissions pass",
                 [Column(header=h) for h in ("file", "exercise", "points", "of", "verdict")], rows)


def _write(results: list[Result], items: list[course.Item] | None, console, *, folder: bool, json_path: str | None,
           junit_path: str | None, gradescope_path: str | None, classroom_path: str | None) -> None:
    """The files asked for, each said in a line unless it went to standard output: --json (a file's Result, or a
    folder's list of them, each with its points), --junit, --gradescope and --classroom."""
    data = [r.to_json() | {"points": r.metrics["points"]} for r in results]
    outputs = ((json_path, lambda: json.dumps(data if folder else data[0], indent=2, ensure_ascii=False,
                                              allow_nan=False) + "\n"),
               (junit_path, lambda: course_files.junit(results)),
               (gradescope_path, lambda: course_files.gradescope(results, [_scored(r, items) for r in results])),
               (classroom_path, lambda: course_files.classroom(results, [_scored(r, items) for r in results])))
    for target, text in outputs:
        if target:
            write_bytes(target, text().encode())
            if target != STDOUT:
                console.print(f"wrote {sanitize(target)}", markup=False)


def fmt_points(x: float) -> str:
    """A score as the gradebook writes it: 7.5, 10, 2.33."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _scored(result: Result, items: list[course.Item] | None) -> course.Score:
    """RESULT's points as its course item says (by its file's name), or as an exercise's default: 10 points that
    the claims about the answer carry, each broken lesser rule deducting a quarter, none left after a call of the
    library function the exercise asks for."""
    exercise = result.metrics["exercise"]
    item = next((i for i in items or [] if i.file == os.path.basename(str(result.config.get("file", "")))), None)
    return course.score(result, item or course.Item(f"{exercise.rpartition('.')[2]}.py", exercise))
