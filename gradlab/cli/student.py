"""The practice commands: `gradlab exercises`, `exercise`, `check` and `grade`, their options and help. Registered on
the `gradlab` group by gradlab.cli.main; what they do is gradlab.practice.classroom.commands and
gradlab.practice.classroom.grade, imported
when a command runs (as the classroom commands import the lessons), so that `gradlab --help` stays fast."""

from __future__ import annotations

import click


@click.command(short_help="The exercises: the gradient code a student writes, checked by `gradlab check`.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write the list as JSON objects (name, lesson, function, level, what) to this file (- for stdout).")
@click.option("--course", "course_path", type=click.Path(dir_okay=False), default=None,
              help="A course file: its own exercises (its `own` folders) are listed too, after gradlab's.")
def exercises(json_path: str | None, course_path: str | None) -> int:
    """Every exercise: its lesson, its name, what to write, its level. `gradlab exercise NAME` writes a starter."""
    from gradlab.practice.classroom import commands

    return commands.list_exercises(json_path, course_path=course_path)


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
    from gradlab.practice.classroom import commands

    click.echo(commands.write_starter(name, out_path=out_path, force=force, course_path=course_path))
    return 0


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
@click.option("--classroom", "classroom_path", type=click.Path(dir_okay=False), default=None,
              help="Write GitHub Classroom's autograding result for one student as plain JSON (its reporter action "
                   "reads it base64-encoded: the workflow encodes it): a test per exercise, its points as the course "
                   "file says, partial credit kept.")
@click.option("--seed", type=click.IntRange(0, 2**31 - 1), default=None,
              help="The seed of the generated inputs (default: 0 for your own check; a fresh random one for a "
                   "course's checks, printed and recorded, so that no submission can carry the expected answers).")
@click.option("--graph", "graph_path", default=None, metavar="FILE",
              help="Draw your function's backward pass on the first input (caught in the sandbox) beside the "
                   "reference's, the first node whose gradient differs marked: FILE.html (click through it), "
                   "FILE.svg or - (the terminal). One file only.")
@click.option("--quiet", is_flag=True, help="Print nothing; use the exit code (and the files).")
def check_cmd(path: str, exercise_name: str | None, course_path: str | None, json_path: str | None,
              junit_path: str | None, gradescope_path: str | None, classroom_path: str | None, seed: int | None,
              quiet: bool, graph_path: str | None = None) -> int:
    """Run PATH's function in a sandbox (time, memory and process limits) on generated inputs, edge cases included,
    compare it with the reference computed here, run the lesson's claims on its outputs, and name the mistake when
    a wrong answer matches a known one. Exit 0 when every check passes, 1 when one fails.

    PATH may be a folder of submissions (the *.py files in it, each checked on its own), summed up in one table. A
    course's checks (a folder, --junit, --gradescope, --classroom) take the exercise from the teacher, --exercise
    NAME or --course FILE, never from the file's own '# gradlab-exercise:' line, and run only where submissions are
    isolated (bubblewrap: as root, or not root in a user namespace of its own; or, as root, a uid of its own); a
    student's own check of one file runs anywhere."""
    from gradlab.practice.classroom import commands

    return commands.check(path, exercise_name=exercise_name, course_path=course_path, json_path=json_path,
                          junit_path=junit_path, gradescope_path=gradescope_path, classroom_path=classroom_path,
                          seed=seed, quiet=quiet, graph_path=graph_path)


@click.command("grade", short_help="Grade a class: a gradebook, each student's feedback and the class page.")
@click.argument("submissions", nargs=-1, type=click.Path())
@click.option("--course", "course_path", type=click.Path(dir_okay=False), default=None,
              help="The course file (TOML): which file is which exercise and its points (see the docs' "
                   "page 'Grading a course', docs/teach/grading.md).")
@click.option("--exercise", "exercise_name", default=None,
              help="Instead of --course: every student hands in this one exercise (a .py file or a folder each), "
                   "worth 10 points.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True,
              help="The folder to write grades.csv, canvas.csv, results.json, class.html and feedback/ in (made "
                   "if missing).")
@click.option("--seed", type=click.IntRange(0, 2**31 - 1), default=None,
              help="The seed of the generated inputs (default: the last run's in DIR, else a fresh random one).")
@click.option("--shard", default=None, metavar="K/N",
              help="Grade only part K of N of the students (fixed by each name), for a class spread over N "
                   "machines; every part needs the same --seed. --merge joins the parts.")
@click.option("--merge", is_flag=True,
              help="SUBMISSIONS are the --out folders of every --shard part of one class: write in DIR exactly what "
                   "one run over the whole class would.")
@click.option("--student", default=None,
              help="Grade this student's files again (their folder's name, as grades.csv shows it) and keep every "
                   "other student's from the last run in DIR.")
@click.option("--quiet", is_flag=True, help="Print nothing but errors.")
def grade(submissions: tuple[str, ...], course_path: str | None, exercise_name: str | None, out_dir: str,
          seed: int | None, shard: str | None, merge: bool, student: str | None, quiet: bool) -> int:
    """Grade every student in SUBMISSIONS (a folder: one folder per student, named after them, the course's files
    anywhere inside it; a Canvas or Moodle download as it comes; or, with --exercise, one .py file per student) in the
    sandbox, as many at a time as the CPUs and memory gradlab is given allow, and write in
    DIR: grades.csv (a row per student, a column per exercise and the total; canvas.csv: the same for Canvas's
    gradebook import), feedback/STUDENT.md and .html (what
    each student's check showed), class.html (pass rates, score spread, the mistakes ranked, a student × exercise
    grid) and results.json. A re-run grades only the files whose content, course entry, seed or gradlab version
    changed (all of them when the course's own exercises changed), and every file the machine kept from being graded.
    overrides.csv and submitted.csv beside the course file: a teacher's overrides and the students' submission times
    (late penalties: course.toml's due), applied on every run. Needs the isolated sandbox (bubblewrap: as root,
    or not root where the kernel allows user namespaces; or, as root, the uid fallback). Exit 0 when the class was
    graded, 1 when some files could not be graded because of the machine."""
    from gradlab.errors import GradlabError
    from gradlab.practice.classroom import shards
    from gradlab.practice.classroom.grade import grade_class, merge_parts

    if merge:
        if shard or course_path or exercise_name or seed is not None or student is not None:
            raise GradlabError("--merge takes the parts' folders and --out only: the course and seed are in the parts")
        return merge_parts(list(submissions), out_dir, quiet)
    if len(submissions) != 1:
        raise GradlabError("give one folder of submissions (several folders only with --merge: the --out folders of "
                           "a class's --shard parts)")
    return grade_class(submissions[0], course_path=course_path, exercise_name=exercise_name, out_dir=out_dir,
                       seed=seed, quiet=quiet, shard=shards.parse(shard) if shard is not None else None,
                       student=student)
