"""A class's folder as an LMS downloads it: Canvas's flat "Download Submissions" files, Moodle's folders and files,
GitHub Classroom's clones; each student found, each file matched to its exercise, a renamed file graded and named in the
feedback, a close name never a silent "missing"."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

from conftest import require_sandbox
from test_grade import SOFTMAX_RIGHT
from test_practice import solution

from gradlab.practice.classroom import course, gradebook, lms

ITEMS = [course.Item("softmax_grad.py", "mnist.softmax_grad"), course.Item("sgd_step.py", "mnist.sgd_step")]


def folder(root: Path, paths: list[str]) -> Path:
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(f"# {path}\n")
    return root


def by_student(root: Path, items=ITEMS, by_file=False) -> dict[str, dict[str, gradebook.Task]]:
    out: dict[str, dict[str, gradebook.Task]] = {}
    for task in gradebook.tasks(str(root), items, by_file=by_file):
        out.setdefault(task.student, {})[task.item.file] = task
    return out


def test_canvas_names_are_read_as_its_source_writes_them():
    assert lms.owner("smithjohn_12345_67890_softmax_grad.py", False) == lms.Owner("smithjohn", "12345",
                                                                                  "softmax_grad.py", "canvas")
    late = lms.owner("leeann_LATE_222_333_softmax_grad-1.py", False)
    assert (late.who, late.id, late.file, late.late) == ("leeann", "222", "softmax_grad-1.py", True)
    anon = lms.owner("anon_x7k2p_444_sgd_step.py", False)
    assert (anon.who, anon.id, anon.file) == ("anon_x7k2p", "anon_x7k2p", "sgd_step.py")
    assert lms.owner("softmax_grad.py", False) is None and lms.owner("alice", True) is None
    assert lms.same_file("softmax_grad-1.py", "softmax_grad.py") and lms.same_file("Softmax_Grad (2).py",
                                                                                 "softmax_grad.py")
    assert lms.same_file("softmax_grad-0f8fad5b-d9cb-469f-a165-70867728950e.py", "softmax_grad.py")
    assert not lms.same_file("softmax_grad_v2.py", "softmax_grad.py")


def test_a_file_named_after_a_classmate_stays_its_uploaders():
    """What follows the LMS's ids is the student's own file name: a name that copies a classmate's prefix is still the
    uploader's file (Canvas removes `_digits_` from the name before the ids, Moodle makes its every _ a space)."""
    forged = lms.owner("smitha_1_2_leeb_222_333_softmax_grad.py", False)
    assert (forged.who, forged.id, forged.file) == ("smitha", "1", "leeb_222_333_softmax_grad.py")
    forged = lms.owner("Ann Lee_101_assignsubmission_file_Bo Chen_102_assignsubmission_file_sgd_step.py", False)
    assert (forged.who, forged.id, forged.file) == ("Ann Lee", "101", "Bo Chen_102_assignsubmission_file_sgd_step.py")


def test_a_canvas_download_finds_each_student_and_the_resubmitted_file(tmp_path):
    """Canvas's flat folder: a student per user id, the file handed in again (softmax_grad-1.py) graded and named in
    the feedback; two students of one name told apart by their ids; a close name named, not silently missing."""
    root = folder(tmp_path, ["smithjohn_12345_67890_softmax_grad-1.py", "smithjohn_12345_67891_sgd_step.py",
                             "smithjohn_999_70000_softmax_grad.py", "smithjohn_999_70001_sgd_stepp.py",
                             "leeann_LATE_222_333_Softmax_Grad.py"])
    found = by_student(root)
    assert sorted(found) == ["leeann", "smithjohn (12345)", "smithjohn (999)"]
    john = found["smithjohn (12345)"]
    assert john["softmax_grad.py"].found == "smithjohn_12345_67890_softmax_grad-1.py"
    assert john["softmax_grad.py"].submission.stop is None
    assert john["softmax_grad.py"].note == "found softmax_grad-1.py and graded it as softmax_grad.py"
    assert found["leeann"]["softmax_grad.py"].note == "found Softmax_Grad.py and graded it as softmax_grad.py"
    other = found["smithjohn (999)"]["sgd_step.py"].submission.stop
    assert other == ("sgd_step.py is missing from this submission (found sgd_stepp.py, a close name: rename it "
                     "sgd_step.py)")
    assert "missing" in found["leeann"]["sgd_step.py"].submission.stop


def test_a_canvas_download_of_one_exercise_takes_each_students_file(tmp_path):
    root = folder(tmp_path, ["smithjohn_12345_67890_homework.py", "leeann_222_333_sgd_step-2.py", "alice.py"])
    found = by_student(root, [course.Item("sgd_step.py", "mnist.sgd_step")], by_file=True)
    assert {s: t["sgd_step.py"].found for s, t in found.items()} == {
        "alice": "alice.py", "smithjohn": "smithjohn_12345_67890_homework.py", "leeann": "leeann_222_333_sgd_step-2.py"}


def test_a_moodle_download_in_folders_or_flat(tmp_path):
    """Moodle's default (a folder per student and plugin) and its flat files (Download submissions in folders off)."""
    root = folder(tmp_path, ["Ann Lee_101_assignsubmission_file/softmax_grad.py",
                             "Ann Lee_101_assignsubmission_onlinetext/onlinetext.html",
                             "Bo Chen_102_assignsubmission_file_/src/sgd_step.py",
                             "Cy Dee_103_assignsubmission_file_softmax_grad.py",
                             "Cy Dee_103_assignsubmission_file_sgd_step (1).py"])
    found = by_student(root)
    assert sorted(found) == ["Ann Lee", "Bo Chen", "Cy Dee"]
    assert found["Ann Lee"]["softmax_grad.py"].found == "Ann Lee_101_assignsubmission_file/softmax_grad.py"
    assert found["Bo Chen"]["sgd_step.py"].found == "Bo Chen_102_assignsubmission_file_/src/sgd_step.py"
    assert found["Cy Dee"]["sgd_step.py"].submission.stop is None and "sgd_step (1).py" in found["Cy Dee"][
        "sgd_step.py"].note


def test_github_classroom_clones_are_a_folder_per_student(tmp_path):
    root = folder(tmp_path, ["hw1-alice/src/softmax_grad.py", "hw1-alice/sgd_step.py", "hw1-bob/softmax_grad.py",
                             "hw1-bob/.git/config", "hw1-bob/softmax-grad.py"])
    found = by_student(root)
    assert sorted(found) == ["hw1-alice", "hw1-bob"]
    assert found["hw1-alice"]["softmax_grad.py"].found == "hw1-alice/src/softmax_grad.py"
    assert found["hw1-bob"]["softmax_grad.py"].found == "hw1-bob/softmax_grad.py"  # the exact name wins
    assert found["hw1-bob"]["softmax_grad.py"].note == ""
    assert found["hw1-bob"]["sgd_step.py"].submission.stop == "sgd_step.py is missing from this submission"


def test_a_canvas_download_is_graded_with_the_resubmitted_file(tmp_path):
    """The issue's case end to end: a right answer Canvas renamed softmax_grad-1.py scored 0 as "missing"; here it
    scores full marks and the feedback names it. Two sandbox starts."""
    require_sandbox()
    subs = tmp_path / "subs"
    subs.mkdir()
    right = solution("mnist.softmax_grad", SOFTMAX_RIGHT)
    (subs / "smithjohn_12345_67890_softmax_grad-1.py").write_text(right)
    (subs / "leeann_LATE_222_333_softmax_grad.py").write_text(right)
    (tmp_path / "course.toml").write_text('[exercises]\n"softmax_grad.py" = "mnist.softmax_grad"\n')
    proc = subprocess.run([sys.executable, "-m", "gradlab", "grade", "subs", "--course", "course.toml", "--out", "out"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": str(Path(__file__).resolve().parent.parent), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {r["student"]: r["total (10)"] for r in csv.DictReader((tmp_path / "out" / "grades.csv").open())}
    assert rows == {"smithjohn": "10", "leeann": "10"}
    assert "found softmax_grad-1.py and graded it as softmax_grad.py" in (tmp_path / "out" / "feedback" /
                                                                         "smithjohn.md").read_text()
    ids = {r["Student"]: r["ID"] for r in csv.DictReader((tmp_path / "out" / "canvas.csv").open())}
    assert ids == {"Points Possible": "", "smithjohn": "12345", "leeann": "222"}  # Canvas matches the ID first
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["students"]["smithjohn"]["softmax_grad.py"]["found"] == "smithjohn_12345_67890_softmax_grad-1.py"
