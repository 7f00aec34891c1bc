"""A teacher's own exercise (gradlab.practice.classroom.own) when the teacher's files are wrong: every mistake in
__init__.py,
harness.py or checks.py is one line naming the teacher's file and line and what to fix, exit 2, said as the course's
fault (nothing graded, nothing counted against a student), checked before any student's file runs, on seed 0 and on
the seed a course draws, bounded in time; the inputs' labels and kinds compared between two seeds; `gradlab
exercises --course` listing the own exercises."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import REPO, assert_one_line_error, invoke

from gradlab.practice import all_exercises
from gradlab.practice.classroom import own
from gradlab.practice.sandbox import modes
from gradlab.practice.sandbox.returned import Received

OWN = REPO / "examples" / "own-exercise"
RIGHT = "def mse_grad(w, b, X, y):\n    r = X @ w + b - y\n    return 2 * X.T @ r / len(y), 2 * r.mean()\n"


@pytest.fixture
def course(tmp_path):
    """The worked example copied out, without gradlab's softmax_grad (a test changes it); all_exercises() and the
    imported course modules as they were, afterwards."""
    before = dict(all_exercises())
    shutil.copytree(OWN, tmp_path / "course")
    toml = tmp_path / "course" / "course.toml"
    toml.write_text("\n".join(line for line in toml.read_text().splitlines() if "softmax_grad" not in line) + "\n")
    (tmp_path / "mse_grad.py").write_text(RIGHT)
    yield tmp_path / "course"
    all_exercises().clear()
    all_exercises().update(before)
    for name in [m for m in sys.modules if m.startswith("gradlab_own_")]:
        del sys.modules[name]


def edit(course: Path, file: str, old: str, new: str) -> str:
    """OLD replaced by NEW in the teacher's FILE; the file's path."""
    path = course / "linreg" / file
    text = path.read_text()
    assert old in text, (file, old)
    path.write_text(text.replace(old, new, 1))
    return str(path)


def line_of(course: Path, file: str, text: str) -> str:
    """"PATH, line N": where TEXT first is in the teacher's FILE (what the error must name)."""
    path = course / "linreg" / file
    return f"{path}, line {next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)}"


REFERENCE = "    cost = ((X @ w + b - y) ** 2).mean()\n"
BROKEN = [  # (file, old, new, what the line says besides the file and line, (the file and text of the line named))
    ("checks.py", REFERENCE, "    if len(y) == 1:\n        raise ValueError('one sample')\n" + REFERENCE,
     "the reference on input 'one sample' (seed 0) failed", ("checks.py", "raise ValueError")),
    ("checks.py", "def _no_two(w, b, X, y):\n", "def _no_two(w, b, X, y):\n    return w.nope\n",
     "the known mistake 'the 2 forgotten' on input 'a batch of 64' (seed 0) failed", ("checks.py", "w.nope")),
    ("checks.py", "    return torch.autograd.grad(cost, [w, b])", "    return torch.autograd.grad(cost, [w, b])[0]",
     "a tensor of shape (5,); return two tensors, e.g. `return a, b`; the reference must return what a right",
     ("harness.py", "tensor_pair(fn(")),
    ("harness.py", "    return {\"gw\": gw.detach()", "    return (gw, gb)\n    return {\"gw\": gw.detach()",
     "are a tuple, not a dict; make Harness(call=...) return {name: tensor or [tensors]}",
     ("harness.py", "HARNESSES = ")),
    ("checks.py", "def _sum(w, b, X, y):", "def _sum(w, b, X, y)", "SyntaxError", ("checks.py", "def _sum")),
    ("harness.py", "def _call(fn", "def _call(fn,,", "SyntaxError", ("harness.py", "def _call")),
    ("checks.py", "import torch\n", "import torch\nimport no_such_module\n",
     "ModuleNotFoundError: No module named 'no_such_module'", ("checks.py", "no_such_module")),
    ("__init__.py", "import Exercise", "import Exercise, Exercize", "ImportError", ("__init__.py", "Exercize")),
    ("checks.py", 'CHECKS = {"mse_grad"', 'CHECKS = {"mse_grd"', "no CHECKS entry for 'mse_grad' (it has 'mse_grd')",
     ("checks.py", "CHECKS = ")),
    ("harness.py", 'HARNESSES = {"mse_grad"', 'HARNESSES = {"msegrad"', "no HARNESSES entry for 'mse_grad'",
     ("harness.py", "HARNESSES = ")),
    ("__init__.py", 'function="mse_grad", level=2,', '"mse_grad", 2,',
     "Exercise(...) takes keywords only: write each field by its name", ("__init__.py", "    Exercise(")),
    ("harness.py", '"kind": "grad"', '"kind": "gradient"', "kind 'gradient'", ("harness.py", "HARNESSES = ")),
]


@pytest.mark.parametrize(("file", "old", "new", "fragment", "named"), BROKEN)
def test_a_broken_own_exercise_is_the_courses_fault_in_one_line(course, tmp_path, file, old, new, fragment, named):
    edit(course, file, old, new)
    if file == "harness.py" and "HARNESSES" in old:  # checks.py takes it from the harness's table as it is
        edit(course, "checks.py", 'HARNESSES["mse_grad"]', "next(iter(HARNESSES.values()))")
    out = invoke("check", str(tmp_path / "mse_grad.py"), "--course", str(course / "course.toml"))
    assert_one_line_error(out, fragment, line_of(course, *named), "(the teacher's files, not a student's)",
                          "no student's file was graded")


def test_a_course_seed_the_reference_fails_on_stops_the_grading_before_any_student(course, tmp_path, monkeypatch):
    """Seed 0 passes the self-test; the seed the course draws does not: no student is graded, nothing is written."""
    monkeypatch.setattr(modes, "detect", lambda: SimpleNamespace(isolated=True, mode="bwrap", why=""))
    edit(course, "harness.py", "    g = torch.Generator().manual_seed(seed)\n",
         "    g = torch.Generator().manual_seed(seed)\n    assert seed < 7, 'seed'\n")
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    (tmp_path / "subs" / "alice" / "mse_grad.py").write_text(RIGHT)
    out = invoke("grade", str(tmp_path / "subs"), "--course", str(course / "course.toml"), "--out",
                 str(tmp_path / "out"), "--seed", "9")
    assert_one_line_error(out, "making the inputs (harness.py's cases, seed 9) failed", "AssertionError: seed",
                          line_of(course, "harness.py", "assert seed < 7"))
    assert not (tmp_path / "out").exists()


def test_a_reference_that_never_ends_is_stopped_and_its_line_named(course, tmp_path, monkeypatch):
    monkeypatch.setattr(own, "SELF_TEST_S", 1.0)
    edit(course, "checks.py", REFERENCE, "    while not STOP.wait(0.05):\n        pass\n" + REFERENCE)
    edit(course, "checks.py", "import torch\n", "import threading\n\nimport torch\n\nSTOP = threading.Event()\n")
    try:
        out = invoke("check", str(tmp_path / "mse_grad.py"), "--course", str(course / "course.toml"))
        assert_one_line_error(out, "did not finish in 1 s", f"(it was at {line_of(course, 'checks.py', 'STOP.wait')})")
    finally:
        sys.modules["gradlab_own_linreg.checks"].STOP.set()  # the teacher's loop ends: no thread left behind


def test_inputs_that_differ_between_two_seeds_are_said(course):
    """An edge case drawn from the seed (here: only on even seeds) is missing from the course's seed: a note."""
    edit(course, "harness.py", "    return out\n", "    if seed % 2 == 0:\n        out.append({**out[0], 'label': "
         "'large X', 'X': out[0]['X'] * 1e3})\n    return out\n")
    from gradlab.practice.classroom import course as courses

    courses.read(str(course / "course.toml"))
    assert own.ready(["linreg.mse_grad"], 4, "c") == []
    [note] = own.ready(["linreg.mse_grad"], 3, "c")
    assert "linreg.mse_grad's inputs differ between seed 0 and seed 3 (only on seed 0: 'large X' (grad)" in note
    assert own.ready(["mnist.sgd_step"], 3, "c") == []  # gradlab's own exercises are not the teacher's


def test_a_course_folder_unreadable_to_other_users_still_runs_its_harness(course, tmp_path):
    """The docs ask for `chmod -R o-rwx` on the course folder (and gradlab's package): the harness bound into the
    sandbox is still readable there by the submission's uid (bubblewrap binds its bytes, 0444), so a right answer
    passes instead of failing on a PermissionError in every student's check."""
    import os
    import subprocess

    from conftest import require_sandbox

    require_sandbox("bwrap")
    for path in [course, *course.rglob("*")]:
        os.chmod(path, 0o750 if path.is_dir() else 0o640)
    proc = subprocess.run([sys.executable, "-m", "gradlab", "check", str(tmp_path / "mse_grad.py"), "--course",
                           str(course / "course.toml"), "--json", str(tmp_path / "r.json")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])


def test_gradlab_exercises_lists_a_courses_own_exercises_beside_gradlabs(course, tmp_path):
    import json

    plain = json.loads(invoke("exercises", "--json", "-").stdout)
    out = invoke("exercises", "--course", str(course / "course.toml"), "--json", "-")
    assert out.exit_code == 0, out.output
    listed = json.loads(out.stdout)
    assert listed[:len(plain)] == plain and [e["name"] for e in listed[len(plain):]] == ["linreg.mse_grad"]
    assert listed[-1]["what"].startswith("the gradient of linear regression's mean squared error")
    assert "linreg.mse_grad" not in {e["name"] for e in plain}
    table = invoke("exercises", "--course", str(course / "course.toml"), terminal_width=200)
    assert "linreg.mse_grad" in table.stdout
    assert_one_line_error(invoke("exercises", "--course", str(tmp_path / "none.toml")), "none.toml")


@pytest.mark.parametrize("seed", [0, 7, 123456])
def test_the_examples_fixed_edge_case_fails_a_nan_answer_on_every_seed(course, seed):
    """The example's perfect fit is there whatever the seed: an answer that divides by the residuals' norm is right
    on every drawn input and NaN there, and fails on every seed (as the reference page says)."""
    from gradlab.practice import checks_of
    from gradlab.practice.classroom import course as courses
    from gradlab.practice.judging.judge import Reference, judge

    def normalised(w, b, X, y):
        r = X @ w + b - y
        size = r.norm()
        r = r / size * size  # the direction times the length: r again, except where the length is 0
        return 2 * X.T @ r / len(y), 2 * r.mean()

    courses.read(str(course / "course.toml"))
    exercise = all_exercises()["linreg.mse_grad"]
    checks = checks_of(exercise)
    cases = checks.cases(seed)
    result = judge(exercise, Reference(checks, cases, [checks.run(None, c) for c in cases]),
                   Received(ok=True, outputs=[checks.call(normalised, c) for c in cases]), seed)
    failed = [row[0] for row in result.tables[0].rows if row[3] == "✗"]
    assert failed == ["a perfect fit (every residual 0)"] and result.exit_code == 1


def test_a_course_starter_is_named_and_checked_as_the_course_file_names_it(tmp_path, monkeypatch):
    """`gradlab exercise NAME --course` writes the file the course expects (ddp_accumulate.py, not accumulate.py),
    and the starter's command names it."""
    from conftest import REPO, invoke

    monkeypatch.chdir(tmp_path)
    course = REPO / "teacher" / "graded" / "course.toml"
    result = invoke("exercise", "ddp_graded.accumulate", "--course", str(course))
    assert result.exit_code == 0, result.output
    text = (tmp_path / "ddp_accumulate.py").read_text()
    assert "gradlab check ddp_accumulate.py --course course.toml" in text and not (tmp_path / "accumulate.py").exists()
