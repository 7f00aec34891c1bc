"""`gradlab grade`: a class graded in one command. The course file's points and scoring, how students and their files
are found (folders per student, nested as LMS downloads and GitHub Classroom clones are, or a file per student), the
files it writes (the gradebook, each student's feedback, the class page, opened in a real browser), re-runs that
grade only what changed, and bad input. The class itself runs once (conftest.once), in the sandbox, as root with
bubblewrap; without it those tests skip (under CI, GRADLAB_REQUIRE_SANDBOX=1, they fail)."""

from __future__ import annotations

import csv
import hashlib
import html
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, assert_one_line_error, invoke, once, require_sandbox
from test_practice import SGD_RIGHT, solution

from gradlab.lessons import LESSONS
from gradlab.practice import all_exercises, checks_of
from gradlab.practice.classroom import adjust, course, feedback, gradebook, similar
from gradlab.practice.classroom.starter import starter
from gradlab.practice.judging.judge import Reference, judge
from gradlab.practice.sandbox.returned import Received

SOFTMAX_RIGHT = """
B = x.shape[0]
p = torch.softmax(x @ W + b, dim=1)
return x.T @ (p - y) / B, (p - y).mean(dim=0)
"""
SOFTMAX_NO_B = SOFTMAX_RIGHT.replace("/ B,", ",")  # ∂W's /B forgotten: a wrong gradient
SOFTMAX_IN_PLACE = """
B = x.shape[0]
p = torch.softmax(x @ W + b, dim=1)
gW, gb = x.T @ (p - y) / B, (p - y).mean(dim=0)
W.zero_()  # right values, but a rule broken: W changed in place
return gW, gb
"""
COURSE = '''[grading]
points = 10

[exercises]
"softmax_grad.py" = "mnist.softmax_grad"
"sgd_step.py" = { exercise = "mnist.sgd_step", points = 4, scoring = "all-or-nothing" }
'''


def judged(name: str, source: str, used: tuple[str, ...] = ()):
    """The Result of SOURCE's function for exercise NAME, judged as if it had run in the sandbox (which noted the
    calls of the exercise's forbidden functions USED)."""
    scope: dict = {}
    exec(compile(source, "<answer>", "exec"), scope)
    exercise = all_exercises()[name]
    checks = checks_of(exercise)
    cases = checks.cases(0)
    refs = [checks.run(None, c) for c in cases]
    return judge(exercise, Reference(checks, cases, refs),
                 Received(ok=True, outputs=[checks.call(scope[exercise.function], c) for c in cases],
                          used=tuple(used)))


# -------------------------------------------------------------------- points
@pytest.mark.parametrize(("body", "scoring", "expected"), [
    (SOFTMAX_RIGHT, "claims", 10), (SOFTMAX_NO_B, "claims", 0), (SOFTMAX_IN_PLACE, "claims", 7.5),
    (SOFTMAX_NO_B, "per-check", 6.67), (SOFTMAX_IN_PLACE, "all-or-nothing", 0), (SOFTMAX_RIGHT, "all-or-nothing", 10),
])
def test_points_mean_what_a_teacher_means(body, scoring, expected):
    """By default the claims about the answer carry the points and a broken rule deducts: a wrong gradient scores
    0, not the 2 of 3 that "inputs unchanged" and "no graph" gave it; per-check keeps that count for who wants it."""
    result = judged("mnist.softmax_grad", solution("mnist.softmax_grad", body))
    item = course.Item("softmax_grad.py", "mnist.softmax_grad", points=10, scoring=scoring)
    assert course.score(result, item).score == expected


def test_an_answer_no_comparison_holds_for_earns_nothing_from_its_properties():
    """A clipping that always rescales to clip_norm keeps "the norm is at most c" and "the direction is kept", but is
    wrong wherever the norm was already under c: 0 points, not 2 of 3 shares; the right answer keeps all 10."""
    always = ("import torch\ndef clip_by_global_norm(grads, clip_norm):\n"
              "    norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads))\n"
              "    return [g * (clip_norm / norm).to(g.dtype) for g in grads]\n")
    right = ("import torch\ndef clip_by_global_norm(grads, clip_norm):\n"
             "    norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads))\n"
             "    return [g * (clip_norm / torch.clamp(norm, min=clip_norm)).to(g.dtype) for g in grads]\n")
    item = course.Item("clip.py", "clip.clip_by_global_norm", points=10)
    wrong = judged("clip.clip_by_global_norm", always)
    properties = [c for c in wrong.claims if c.id.rsplit(":", 1)[-1] in ("extra0", "extra1")]
    assert properties and all(c.passed for c in properties)  # what the always-rescaling answer does have
    got = course.score(wrong, item)
    assert got.score == 0 and "its properties earn nothing alone" in got.how, got
    assert course.score(judged("clip.clip_by_global_norm", right), item).score == 10


LIBRARY_CLIP = ("import torch\ndef clip_by_global_norm(grads, clip_norm):\n"
                "    out = [g.detach().clone().requires_grad_(False) for g in grads]\n"
                "    params = [torch.nn.Parameter(torch.zeros_like(g)) for g in out]\n"
                "    for p, g in zip(params, out):\n        p.grad = g\n"
                "    torch.nn.utils.clip_grad_norm_(params, clip_norm)\n    return [p.grad for p in params]\n")


@pytest.mark.parametrize(("scoring", "forbidden", "expected"), [
    ("claims", None, 0), ("per-check", None, 0), ("all-or-nothing", None, 0), ("claims", 0.25, 7.5),
    ("claims", 0, 10)])
def test_calling_the_function_the_exercise_asks_for_scores_nothing(scoring, forbidden, expected):
    """clip.clip_by_global_norm answered by torch.nn.utils.clip_grad_norm_ (the function it asks students to write)
    scored 7.5 of 10 under the default scoring: a lesser rule's quarter. Now 0 by default; `forbidden` sets the share
    it takes (0.25: what deduct took before), and deduct keeps its meaning for the lesser rules (7.5 above)."""
    result = judged("clip.clip_by_global_norm", LIBRARY_CLIP, used=("torch.nn.utils.clip_grad_norm_",))
    assert any(c.id.endswith(":own") and not c.passed for c in result.claims)
    item = course.Item("clip.py", "clip.clip_by_global_norm", scoring=scoring,
                       **({} if forbidden is None else {"forbidden": forbidden}))
    got = course.score(result, item)
    assert got.score == expected, got
    if expected == 0 and scoring != "all-or-nothing":
        assert "calls the library function the exercise asks you to write" in got.how, got

def test_a_course_file_sets_points_and_scoring(tmp_path):
    (tmp_path / "course.toml").write_text(COURSE)
    items = course.read(str(tmp_path / "course.toml"))
    assert [(i.file, i.exercise, i.points, i.scoring) for i in items] == [
        ("softmax_grad.py", "mnist.softmax_grad", 10, "claims"), ("sgd_step.py", "mnist.sgd_step", 4, "all-or-nothing")]
    (tmp_path / "course.toml").write_text(COURSE.replace("points = 10", "points = 10\nforbidden = 0.5"))
    assert [i.forbidden for i in course.read(str(tmp_path / "course.toml"))] == [0.5, 0.5]


@pytest.mark.parametrize(("text", "fragment"), [
    ('[exercises]\n"a.py" = { exercise = "mnist.sgd_step", points = -1 }\n', "points = -1 must be a number above 0"),
    ('[exercises]\n"a.py" = { exercise = "mnist.sgd_step", scoring = "most" }\n', "scoring = 'most' must be one of"),
    ('[grading]\ndeduct = 2\n[exercises]\n"a.py" = "mnist.sgd_step"\n', "deduct = 2 must be a share"),
    ('[grading]\nforbidden = -1\n[exercises]\n"a.py" = "mnist.sgd_step"\n', "forbidden = -1 must be a share"),
    ('[exercises]\n"a.py" = { exercise = "mnist.sgd_step", weight = 1 }\n', "unknown key 'weight'"),
    ('[exercises]\n"a.py" = "mnist.nope"\n', "unknown exercise 'mnist.nope'"),
    ('[points]\n"a.py" = 3\n[exercises]\n"a.py" = "mnist.sgd_step"\n', "unknown key 'points'"),
    ("[exercises\n", "is not valid TOML"),
])
def test_a_bad_course_file_is_one_line_and_nothing_is_written(tmp_path, text, fragment):
    (tmp_path / "course.toml").write_text(text)
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    out = invoke("grade", str(tmp_path / "subs"), "--course", str(tmp_path / "course.toml"), "--out",
                 str(tmp_path / "out"))
    assert_one_line_error(out, fragment)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("args", "fragment"), [
    (["--exercise", "mnist.sgd_step", "--course", "c.toml"], "one of the two"),
    ([], "give --course FILE"),
    (["--exercise", "mnist.nope"], "unknown exercise 'mnist.nope'"),
])
def test_bad_usage_is_one_line(tmp_path, args, fragment):
    (tmp_path / "subs").mkdir()
    assert_one_line_error(invoke("grade", str(tmp_path / "subs"), "--out", str(tmp_path / "out"), *args), fragment)
    assert not (tmp_path / "out").exists()


def test_grading_a_class_needs_the_sandbox_and_writes_nothing_without(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADLAB_SANDBOX", "plain")
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    out = invoke("grade", str(tmp_path / "subs"), "--exercise", "mnist.sgd_step", "--out", str(tmp_path / "out"))
    assert_one_line_error(out, "runs other people's code", "nothing was written")
    assert not (tmp_path / "out").exists()


def test_check_refuses_one_gradescope_file_for_a_class_and_points_a_class_folder_to_grade(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    out = invoke("check", str(tmp_path), "--exercise", "mnist.sgd_step", "--gradescope", str(tmp_path / "r.json"))
    assert_one_line_error(out, "--gradescope writes one student's results.json", "gradlab grade")
    assert not (tmp_path / "r.json").exists()
    out = invoke("check", str(tmp_path), "--exercise", "mnist.sgd_step", "--classroom", str(tmp_path / "r.json"))
    assert_one_line_error(out, "--classroom writes one student's result", "gradlab grade")
    assert not (tmp_path / "r.json").exists()
    assert_one_line_error(invoke("check", str(tmp_path / "a.py"), "--classroom", str(tmp_path / "r.json")),
                          "--classroom grades for a course", "--exercise NAME")
    (tmp_path / "class" / "alice").mkdir(parents=True)
    (tmp_path / "class" / "alice" / "sgd_step.py").write_text("x = 1\n")
    (tmp_path / "c.toml").write_text('[exercises]\n"sgd_step.py" = "mnist.sgd_step"\n')
    assert_one_line_error(invoke("check", str(tmp_path / "class"), "--course", str(tmp_path / "c.toml")),
                          "a folder per student is a class", "gradlab grade")


# -------------------------------------------------------------------- finding students and their files
def test_students_are_folders_found_at_any_depth_without_following_links(tmp_path):
    subs = tmp_path / "subs"
    for path in ("alice/softmax_grad.py", "bob-repo/src/softmax_grad.py", "carol/a/softmax_grad.py",
                 "carol/b/softmax_grad.py", "dave/softmax_grad.py", "dave/tests/softmax_grad.py"):
        (subs / path).parent.mkdir(parents=True, exist_ok=True)
        (subs / path).write_text(f"# {path}\n")
    (subs / "erin").mkdir()
    os.symlink("/etc/passwd", subs / "erin" / "softmax_grad.py")
    (subs / "frank").mkdir()
    (subs / ".git").mkdir()
    items = [course.Item("softmax_grad.py", "mnist.softmax_grad")]
    found = {t.student: t for t in gradebook.tasks(str(subs), items, by_file=False)}
    assert sorted(found) == ["alice", "bob-repo", "carol", "dave", "erin", "frank"]
    assert found["bob-repo"].found == "bob-repo/src/softmax_grad.py" and found["bob-repo"].submission.stop is None
    assert "more than once" in found["carol"].submission.stop
    assert found["dave"].found == "dave/softmax_grad.py"  # the shallowest copy
    assert found["erin"].submission.source is None and "symbolic link" in found["erin"].submission.stop
    assert found["frank"].submission.stop == "softmax_grad.py is missing from this submission"


def test_one_file_per_student_with_exercise(tmp_path):
    (tmp_path / "alice.py").write_text("a\n")
    (tmp_path / "bob.py").write_text("b\n")
    (tmp_path / "notes.txt").write_text("not a submission\n")
    items = [course.Item("sgd_step.py", "mnist.sgd_step")]
    found = gradebook.tasks(str(tmp_path), items, by_file=True)
    assert [(t.student, t.found) for t in found] == [("alice", "alice.py"), ("bob", "bob.py")]
    assert found[0].digest != found[1].digest


# -------------------------------------------------------------------- what it writes, from records
def record(student: str, file: str, *, score: float, points: float = 10, passed: bool = False, **more) -> dict:
    base = {"student": student, "file": file, "exercise": "mnist.softmax_grad", "found": f"{student}/{file}",
            "score": score, "points": points, "how": "", "passed": passed, "stopped": None, "diagnosis": None,
            "notes": [], "claims": [], "inputs": [], "printed": "", "trace": ""}
    return base | more


def test_the_class_page_ranks_mistakes_and_escapes_what_students_chose():
    items = [course.Item("softmax_grad.py", "mnist.softmax_grad")]
    evil = '<script>alert(1)</script>'
    table = {
        "alice": {"softmax_grad.py": record("alice", "softmax_grad.py", score=10, passed=True)},
        evil: {"softmax_grad.py": record(evil, "softmax_grad.py", score=0, printed=evil,
                                         diagnosis="∂W's /B forgotten: yours 0.125, expected 0.0125")},
        "bob": {"softmax_grad.py": record("bob", "softmax_grad.py", score=0,
                                          diagnosis="∂W's /B forgotten: yours 3.5, expected 0.35")},
        "carol": {"softmax_grad.py": record("carol", "softmax_grad.py", score=0, stopped="syntax error at line 3")},
    }
    slug = gradebook.slugs(list(table))
    page = feedback.class_html("t", items, table, slug, "made")
    assert "<script>" not in page and "http" not in page
    mistakes = re.findall(r'<tr><td class="n">(\d+)</td><td>mnist.softmax_grad</td><td class="diagnosis">([^<]*)'
                          r'<span class="muted"> \((.*?)\)</span>', page)
    # one group per mistake, shown with a real diagnosis, numbers and all (masking showed "yours …, expected …")
    assert mistakes == [("2", "∂W&#x27;s /B forgotten: yours 0.125, expected 0.0125",
                         "&lt;script&gt;alert(1)&lt;/script&gt; and 1 more"), ("1", "syntax error at line 3", "carol")]
    assert "1 of 4 (25 %)" in page
    text = feedback.feedback_html(evil, items, table[evil])
    assert "<script>" not in text and "&lt;script&gt;" in text
    md = feedback.feedback_md(evil, items, table[evil])
    assert md.startswith("# Feedback for \\<script\\>") and "```\n<script>alert(1)</script>\n```" in md
    assert "&lt;" not in md  # a raw &lt; read as such in the .md file
    assert re.fullmatch(r"script_alert_1_script-[0-9a-f]{8}", slug[evil]) and slug["alice"] == "alice"


def test_a_long_diagnosis_is_cut_between_words_with_the_rest_on_expand():
    items = [course.Item("softmax_grad.py", "mnist.softmax_grad")]
    long = "the shapes (10, 784) where (784, 10) was expected: " + "a word " * 60 + "the end"
    table = {"ann": {"softmax_grad.py": record("ann", "softmax_grad.py", score=0, diagnosis=long)}}
    page = feedback.class_html("t", items, table, gradebook.slugs(list(table)), "made")
    summary, full = re.search(r"<details><summary>(.*?)</summary>(.*?)</details>", page).groups()
    assert summary.startswith("the shapes (10, 784) where (784, 10) was expected") and " …<span" in summary
    assert full == long and not summary.split(" …")[0].endswith(" wor")

def test_feedback_shows_the_students_own_lines_and_starters_keep_the_texts_indentation():
    """The feedback showed none of the student's code: it shows the function they wrote, the line an error names
    marked; the starter's docstring kept no indentation of the exercise text (a formula's continuation line)."""
    items = [course.Item("softmax_grad.py", "mnist.softmax_grad")]
    source = solution("mnist.softmax_grad", SOFTMAX_NO_B)
    line = source.splitlines().index("    return x.T @ (p - y) , (p - y).mean(dim=0)") + 1
    rec = record("ann", "softmax_grad.py", score=0, source=source, stopped=f"ValueError: x (line {line}: return)")
    md = feedback.feedback_md("ann", items, {"softmax_grad.py": rec})
    assert f"→ {line} │     return x.T @ (p - y) , (p - y).mean(dim=0)" in md and "def softmax_grad(W, b, x, y):" in md
    assert feedback.DIFFERENCE in feedback.feedback_html("ann", items, {"softmax_grad.py": rec | {
        "inputs": [["a batch", "the gradient", 0.5, "✗"]]}}) and "max relative" not in md
    text = starter(all_exercises()["mnist.LogSoftmax"])
    assert "\n              z − logsumexp(z) = (z − m)" in text  # 4 for the docstring, 10 of the text's own


def test_every_claim_says_what_is_measured_in_the_words_of_the_check():
    """Claims told students "max relative |Δ|", a measure nowhere defined for them: each exercise's claims (gradlab's
    own, the graded variants in teacher/, the own-exercise example) say kit.exercise.relative's measure, the check's
    table heads its column with the same words, and no text a student reads says "relative |Δ|"."""
    from gradlab.kit.exercise import DIFFERENCE

    texts = [text for e in all_exercises().values() for text, _ in e.claims.values()]
    files = [*REPO.glob("teacher/graded/*/__init__.py"), REPO / "examples/own-exercise/linreg/__init__.py",
             *REPO.glob("gradlab/lessons/*/exercises/__init__.py"), REPO / "gradlab/practice/judging/judge.py",
             REPO / "gradlab/practice/judging/diagnosis.py", REPO / "gradlab/practice/classroom/feedback.py"]
    assert len(texts) > 20 and all("relative |Δ|" not in t for t in texts)
    assert [str(f) for f in files if "relative |Δ|" in f.read_text(encoding="utf-8")] == []
    assert sum(DIFFERENCE in t for t in texts) >= len(texts) - 3, [t for t in texts if DIFFERENCE not in t]

def test_the_exercises_table_is_a_row_a_line_in_a_pipe(monkeypatch):
    """`gradlab exercises | less` wrapped every "what to write" at rich's 80 columns. (A pipe with no COLUMNS set:
    pytest-xdist sets COLUMNS=80 in its workers, and a COLUMNS the user set is obeyed.)"""
    monkeypatch.delenv("COLUMNS", raising=False)
    out = invoke("exercises").output
    for exercise in all_exercises().values():
        assert any(exercise.name in row and exercise.what in row for row in out.splitlines()), exercise.name

ANN = """
B = x.shape[0]
logits = x @ W + b
p = torch.softmax(logits, dim=1)
diff = p - y
gW = x.T @ diff / B
gb = diff.sum(dim=0) / B
return gW, gb
"""
BEN = """
n = x.shape[0]   # the batch
z = x@W+b

probs = torch.softmax(z, dim=1)
d = probs - y  # the error
grad_w = x.T @ d / n
grad_b = d.sum(dim=0) / n
return grad_w, grad_b
"""
DAN = """
grads_W, grads_b = [], []
for i in range(x.shape[0]):
    q = torch.softmax(x[i] @ W + b, dim=0) - y[i]
    grads_W.append(torch.outer(x[i], q))
    grads_b.append(q)
return torch.stack(grads_W).mean(0), torch.stack(grads_b).mean(0)
"""


def test_near_identical_files_are_a_hint_side_by_side():
    """ben's softmax_grad is ann's with its names, comments and layout changed: one pair, shown side by side on the
    class page as a hint; carol's and dan's, written differently, are in none."""
    items = [course.Item("softmax_grad.py", "mnist.softmax_grad")]
    bodies = {"ann": ANN, "ben": BEN, "carol": SOFTMAX_RIGHT, "dan": DAN}
    table = {n: {"softmax_grad.py": record(n, "softmax_grad.py", score=10, passed=True,
                                           source=solution("mnist.softmax_grad", b))} for n, b in bodies.items()}
    found = similar.pairs("softmax_grad.py", {n: r["softmax_grad.py"]["source"] for n, r in table.items()},
                          starter(all_exercises()["mnist.softmax_grad"]))
    assert [(p.one, p.other) for p in found] == [("ann", "ben")] and found[0].share >= similar.THRESHOLD, found
    page = feedback.class_html("t", items, table, gradebook.slugs(list(table)), "made")
    section = page.split("<h2>Similar submissions</h2>")[1]
    assert "A hint, never a grade" in section and "ann and ben: softmax_grad.py" in section
    assert section.count('<pre>') == 2 and "grad_w = x.T @ d / n" in section and "gW = x.T @ diff / B" in section

def test_a_docstring_is_set_aside():
    """ast.walk queues a node's children before it yields the node: a docstring dropped from the node then was walked
    all the same (#44)."""
    assert "'doc'" not in similar.tokens('def f():\n    """doc"""\n    return 1')
    assert similar.tokens('def f():\n    """doc"""\n    return 1') == similar.tokens("def f():\n    return 1")


def _similar_class(bodies: dict[str, str]) -> tuple[list, str]:
    """BODIES ({student: softmax_grad's body, or a whole file}) as a class: the pairs similar.pairs finds and the
    class page's section on them."""
    items = [course.Item("softmax_grad.py", "mnist.softmax_grad")]
    sources = {n: b if b.startswith('"""') else solution("mnist.softmax_grad", b) for n, b in bodies.items()}
    table = {n: {"softmax_grad.py": record(n, "softmax_grad.py", score=10, passed=True, source=src)}
             for n, src in sources.items()}
    found = similar.pairs("softmax_grad.py", sources, starter(all_exercises()["mnist.softmax_grad"]))
    page = feedback.class_html("t", items, table, gradebook.slugs(list(table)), "made")
    return [(p.one, p.other) for p in found], page.split("<h2>Similar submissions</h2>")[1]


def test_a_ring_of_copies_and_a_copy_with_its_own_docstring_are_reported():
    """A teacher's trial (#44) planted a ring of 3 identical files in a class of 5, which the rule that set aside what
    a quarter of the class (at least 3 files) shares hid, and eve's copy of alice's file with a docstring of her
    own."""
    found, section = _similar_class({"ann": ANN, "ann2": ANN, "ann3": ANN, "carol": SOFTMAX_RIGHT, "dan": DAN})
    assert found == [("ann", "ann2"), ("ann", "ann3"), ("ann2", "ann3")], found
    assert section.count("<details>") == 3 and "No pair" not in section
    alice = solution("mnist.softmax_grad", "p = torch.softmax(x @ W + b, dim=1) - y\nreturn x.T @ p / x.shape[0], "
                                           "p.mean(0)\n")  # short: the docstring's k-grams weighed (share 0.88)
    doc = starter(all_exercises()["mnist.softmax_grad"]).split('"""')[3]  # the function's docstring, the starter's
    eve = alice.replace(doc, "Eve's own softmax gradient, from the lecture notes\n    ")
    assert eve != alice
    assert _similar_class({"alice": alice, "carol": SOFTMAX_RIGHT, "dan": DAN, "eve": eve})[0] == [("alice", "eve")]


def test_starter_code_alone_is_no_pair_and_the_page_says_none_was_found():
    """Two students who handed in the starter (one with a docstring of their own) share only what every student was
    given: no pair; the page says none was found, at what share, and what was set aside."""
    given = starter(all_exercises()["mnist.softmax_grad"])
    found, section = _similar_class({"ann": given, "ben": given.replace('"""gradlab', '"""My file. gradlab', 1),
                                     "carol": SOFTMAX_RIGHT})
    assert found == [] and "<details>" not in section
    assert f"No pair of submissions at least {100 * similar.THRESHOLD:.0f} % similar." in section
    assert "starter" in section and "docstrings" in section


def test_apostrophes_are_not_quotes_when_the_class_page_masks_a_diagnosis():
    """One mistake is one row whatever its numbers and quoted inputs: an apostrophe (the student's, don't, the
    students') is text, not a quote that masks everything up to the next one."""
    said = ("the student's ∂cost/∂w is {} × the expected on input '{}' (don't sum: the students' usual slip), "
            "'{}' too")
    texts = [said.format(2.5, "a batch of 64", "one sample"), said.format(3.25, "a wide X (N < D)", "x's copy")]
    assert {feedback.mistake_of({"passed": False, "stopped": None, "diagnosis": d}) for d in texts} == {
        "the student's ∂cost/∂w is … × the expected on input '…' (don't sum: the students' usual slip), '…' too"}


@pytest.mark.parametrize("order", [1, -1])
def test_no_name_takes_another_students_feedback_file(order):
    """!alice (a folder listed before alice) was given feedback/alice.md, and alice alice-2.md."""
    names = ["!alice", "alice", " alice", "alice_", "al.ice", "bob", "Bob", "BOB"][::order]
    slug = gradebook.slugs(names)
    assert slug["alice"] == "alice" and slug["al.ice"] == "al.ice" and slug["alice_"] != "alice_"
    assert len({v.lower() for v in slug.values()}) == len(names)
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", v) for v in slug.values())
    assert {v for v in slug.values() if "-" not in v} == {"alice", "al.ice"}  # the others: their name's hash
    assert gradebook.slugs([*names, "alice-" + slug["!alice"].split("-")[1]])["!alice"] != slug["!alice"]


def test_the_markdown_feedback_shows_what_students_chose_as_text():
    """An exception's message, a folder's name, a note: HTML-escaped but read as Markdown, a [link](…) or an ![image]
    (…) (a tracking pixel the teacher's viewer fetched) came alive in feedback/*.md."""
    from markdown_it import MarkdownIt

    items = [course.Item("softplus.py", "log1pexp.softplus")]
    evil = "[Regrade request: click](https://127.0.0.1:9/phish) ![](https://127.0.0.1:9/t.png) *x* www.evil.example"
    name = "[alice](https://127.0.0.1:9/x)"
    rec = record(name, "softplus.py", score=0, stopped=f"ValueError: {evil}", diagnosis=evil, notes=[evil],
                 inputs=[[evil, evil, 0.5, "✗"]], found=f"{name}/`softplus`.py")
    md = feedback.feedback_md(name, items, {"softplus.py": rec})
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert "<a " not in html and "<img" not in html and "<em>" not in html, html
    outside = re.sub(r"`[^`\n]*`", "", md)  # a code span is never a link
    assert "https://" not in outside and "www.evil" not in outside  # no bare link for GFM's autolinks either
    assert html.count(evil) == 5 and f"<h1>Feedback for {name}</h1>" in html, html
    assert "Graded file: <code>[alice](https://127.0.0.1:9/x)/ˋsoftplusˋ.py</code>" in html, html


def test_the_markdown_feedback_per_input_table_renders():
    """The per-input table's header held DIFFERENCE's unescaped | (|yours − expected|): 6 header cells over 4
    columns, which no Markdown reader takes for a table (#44)."""
    from markdown_it import MarkdownIt

    items = [course.Item("softmax_grad.py", "mnist.softmax_grad")]
    rec = record("ann", "softmax_grad.py", score=0, inputs=[["a batch | of 64", "the gradient", 0.5, "✗"],
                                                            ["one sample", "the gradient", 0.25, "✓"]])
    html = MarkdownIt("commonmark").enable("table").render(feedback.feedback_md("ann", items, {"softmax_grad.py": rec}))
    table = re.search(r"<table>.*</table>", html, re.S)
    assert table, html
    assert table.group(0).count("</th>") == 4 and table.group(0).count("<tr>") == 3, table.group(0)
    assert f"<th style=\"text-align:right\">{feedback.DIFFERENCE}</th>" in table.group(0), table.group(0)
    assert "<td>a batch | of 64</td>" in table.group(0)


def test_the_gradebook_is_a_csv_a_spreadsheet_reads_as_numbers():
    items = [course.Item("softmax_grad.py", "mnist.softmax_grad"), course.Item("sgd_step.py", "mnist.sgd_step", 5)]
    table = {"=cmd()": {"softmax_grad.py": record("x", "softmax_grad.py", score=7.5),
                        "sgd_step.py": record("x", "sgd_step.py", score=5, points=5)}}
    rows = list(csv.reader(feedback.grades_csv(items, table).splitlines()))
    assert rows == [["student", "mnist.softmax_grad (10)", "mnist.sgd_step (5)", "total (15)"],
                    ["'=cmd()", "7.5", "5", "12.5"]]
    names = [" =cmd()", "\t=cmd()", "\r=cmd()", "\u200b=cmd()", "\uff1dcmd()", "\uff0bcmd()", "\u3000@cmd()", " alice"]
    recs = table["=cmd()"]
    rows = list(csv.reader(io.StringIO(feedback.grades_csv(items, dict.fromkeys([*names, "bob-x"], recs)), newline="")))
    assert [r[0] for r in rows[1:]] == [*("'" + n.replace("\r", "\\r").replace("\t", "\t'") for n in names),
                                        "bob-x"]  # after a tab too: a sheet split on tabs reads a cell there


def test_the_canvas_gradebook_has_the_header_and_rows_canvas_import_reads():
    """canvas.csv as Canvas's importer (lib/gradebook_importer.rb) reads it: Student, ID, SIS Login ID, Section, then
    the assignments (none titled `… (number)`, which would name an existing assignment's id); a Points Possible row;
    students found by SIS Login ID (the ID left empty)."""
    items = [course.Item("softmax_grad.py", "mnist.softmax_grad"), course.Item("sgd_step.py", "mnist.sgd_step", 5)]
    table = {"alice": {"softmax_grad.py": record("x", "softmax_grad.py", score=7.5),
                       "sgd_step.py": record("x", "sgd_step.py", score=5, points=5)},
             "=cmd()": {"softmax_grad.py": record("x", "softmax_grad.py", score=0),
                        "sgd_step.py": record("x", "sgd_step.py", score=0, points=5)}}
    rows = list(csv.reader(feedback.canvas_csv(items, table).splitlines()))
    header = rows[0]
    assert header[:4] == ["Student", "ID", "SIS Login ID", "Section"]  # what row_has_student_headers? and
    assert not any(re.search(r"\(\d+\)\s*$", h) for h in header[4:])  # update_column_count accept; no id suffix
    assert rows[1] == ["Points Possible", "", "", "", "10", "5"]
    assert rows[2] == ["alice", "", "alice", "", "7.5", "5"] and rows[3] == ["'=cmd()", "", "'=cmd()", "", "0", "0"]



FORGED = ["zed Points Possible", "Points  possible", "x;=1+1", "x,=1+1", "Smith, -2+3", "a;\u3000@cmd()",
          'q;"=1+1', "a|=1", "x\t+1"]


def test_no_name_forges_a_points_row_or_a_formula_under_either_separator():
    """canvas.csv and grades.csv for students who chose their folder's name: Canvas's importer takes any first cell
    holding `Points Possible` for the points row (check_for_non_student_row in lib/gradebook_importer.rb: the
    assignment got a second one), and a spreadsheet splitting on ; (German, French) or , read `x;=1+1`'s part after
    the separator as a formula (the guard looked at a cell's first character only)."""
    items = [course.Item("softmax_grad.py", "mnist.softmax_grad")]
    table = {n: {"softmax_grad.py": record(n, "softmax_grad.py", score=5)} for n in ["alice", *FORGED]}
    canvas = feedback.canvas_csv(items, table)
    assert sum("Points Possible" in r[0] for r in csv.reader(io.StringIO(canvas, newline=""))) == 1
    for text in (canvas, feedback.grades_csv(items, table)):
        for sep in ",;":  # as a spreadsheet reads it (quotes honoured), and split on the separator alone
            cells = [c for row in csv.reader(io.StringIO(text, newline=""), delimiter=sep) for c in row]
            cells += [c for line in text.splitlines() for c in line.split(sep)]
            assert not any(feedback._formula(c) for c in cells if not c.lstrip(' "').startswith("'")), sep
    rows = {r[0]: r for r in csv.reader(io.StringIO(canvas, newline=""))}
    assert "zed Points_Possible" in rows and "x;'=1+1" in rows and rows["alice"][2] == "alice"


def test_names_that_look_alike_are_each_graded_and_shown_apart(tmp_path):
    """alice and Cyrillic аlice, NFC and NFD josé: graded as two students and shown identically in grades.csv and
    class.html; now each is graded, its letters outside ASCII shown as \\u escapes, and the teacher told."""
    import unicodedata

    names = ["alice", "\u0430lice", "jos\u00e9", unicodedata.normalize("NFD", "jos\u00e9"), "bob", "\u738b\u4f1f"]
    for name in names:
        (tmp_path / name).mkdir()
    items = [course.Item("softmax_grad.py", "mnist.softmax_grad")]
    notes: list[str] = []
    found = gradebook.students(str(tmp_path), items, by_file=False, notes=notes)
    assert sorted(found) == sorted(["alice", "\\u0430lice", "jos\\u00e9", "jose\\u0301", "bob", "\u738b\u4f1f"])
    assert len(notes) == 1 and notes[0].startswith("4 students' names look alike"), notes
    table = {s: {"softmax_grad.py": record(s, "softmax_grad.py", score=5)} for s in found}
    shown = [r[0] for r in csv.reader(io.StringIO(feedback.grades_csv(items, table), newline=""))][1:]
    page = feedback.class_html("t", items, table, gradebook.slugs(list(table)), "made")
    assert len(set(shown)) == 6 and all(s in page for s in shown)

# -------------------------------------------------------------------- a class, graded for real
STUDENTS = {
    "alice/softmax_grad.py": ("mnist.softmax_grad", SOFTMAX_RIGHT),
    "alice/sgd_step.py": ("mnist.sgd_step", SGD_RIGHT),
    "bob/src/softmax_grad.py": ("mnist.softmax_grad", SOFTMAX_NO_B),  # a GitHub Classroom clone's layout
    "bob/sgd_step.py": ("mnist.sgd_step", SGD_RIGHT.replace(".sum(dim=1).mean()", ".sum()")),
    "carol/softmax_grad.py": ("mnist.softmax_grad", None),  # the starter; no sgd_step.py
    "dave/softmax_grad.py": ("mnist.softmax_grad", SOFTMAX_NO_B),
    "dave/sgd_step.py": (None, "def sgd_step(W, b, x, y, lr):\n    return (\n"),  # a syntax error
    "erin/softmax_grad.py": ("mnist.softmax_grad", SOFTMAX_IN_PLACE),
}


def make_class(root: Path) -> None:
    for path, (name, body) in STUDENTS.items():
        (root / "subs" / path).parent.mkdir(parents=True, exist_ok=True)
        text = body if name is None else starter(all_exercises()[name]) if body is None else solution(name, body)
        (root / "subs" / path).write_text(text)
    (root / "course.toml").write_text(COURSE)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    require_sandbox()

    def make(root: Path) -> None:
        make_class(root)
        proc = subprocess.run([sys.executable, "-m", "gradlab", "grade", "subs", "--course", "course.toml", "--out",
                               "out"], cwd=root, capture_output=True, text=True, timeout=600)
        (root / "first.txt").write_text(proc.stdout + proc.stderr + f"\nexit {proc.returncode}\n")

    return once(tmp_path_factory, "grade-class", make)


def test_a_class_is_graded_into_a_gradebook(graded):
    log = (graded / "first.txt").read_text()
    assert log.rstrip().endswith("exit 0") and "grading 10 files of 5 students with seed" in log, log
    assert len(re.findall(r"^\[\d+/10\] ", log, re.M)) == 10  # progress: a line per graded file
    assert "the lesson mnist holds analytic_gradients, which answers mnist.softmax_grad" in log
    rows = {r["student"]: r for r in csv.DictReader((graded / "out" / "grades.csv").open())}
    got = {s: (r["mnist.softmax_grad (10)"], r["mnist.sgd_step (4)"], r["total (14)"]) for s, r in rows.items()}
    assert got == {"alice": ("10", "4", "14"), "bob": ("0", "0", "0"), "carol": ("0", "0", "0"),
                   "dave": ("0", "0", "0"), "erin": ("7.5", "0", "7.5")}


def test_each_student_gets_the_feedback_their_check_would_show(graded):
    bob = (graded / "out" / "feedback" / "bob.md").read_text()
    assert "∂W's /B forgotten" in bob and "summed cost: your step is B times too large" in bob
    assert "Graded file: `bob/src/softmax_grad.py`" in bob and "| batch of 100 | grad |" in bob
    carol = (graded / "out" / "feedback" / "carol.md").read_text()
    assert "raises NotImplementedError" in carol and "sgd_step.py is missing from this submission" in carol
    assert "syntax error at line 2" in (graded / "out" / "feedback" / "dave.md").read_text()
    erin = (graded / "out" / "feedback" / "erin.html").read_text()
    assert "changed W in place" in erin and "1 broken rule" in erin
    data = json.loads((graded / "out" / "results.json").read_text())
    assert sorted(data["students"]) == ["alice", "bob", "carol", "dave", "erin"]
    assert data["students"]["alice"]["softmax_grad.py"]["passed"] is True


def test_the_class_page_in_a_real_browser(graded, tmp_path, browser):
    page = graded / "out" / "class.html"
    assert not re.search(r"(src|href)=\"(https?:)?//", page.read_text())  # offline: nothing fetched
    browser.open(page.as_uri(), ready="true")
    dom = browser.dom()
    ranked = re.findall(r'<tr><td class="n">(\d+)</td><td>([^<]+)</td><td class="diagnosis">(.*?)</td>', dom)
    counts = [int(r[0]) for r in ranked]
    assert counts == sorted(counts, reverse=True) and sum(counts) == 2 * 5 - 2, ranked  # every file but alice's two
    assert [r[:2] for r in ranked if "/B forgotten" in r[2]] == [("2", "mnist.softmax_grad")], ranked
    grid = re.search(r'<table class="grid">(.*?)</table>', dom, re.S).group(1)
    links = re.findall(r'href="(feedback/[^"#]+)(?:#([^"]+))?"', grid)
    assert len(links) == 5 * 3  # each student's name and their two exercises
    for href, fragment in links:
        target = (graded / "out" / href).read_text()
        assert not fragment or f'id="{fragment}"' in target, (href, fragment)
    assert "1 of 5 (20 %)" in dom  # softmax_grad: alice alone passes
    for name, target in (("class", page), ("feedback", graded / "out" / "feedback" / "bob.html")):
        shot = tmp_path / f"{name}.png"  # a teacher's page and a student's: laid out and drawn by a real browser
        browser.window(1280, 1000)
        browser.open(target.as_uri(), ready="true")
        shot.write_bytes(browser.screenshot())
        assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 20_000, name
    browser.open((graded / "out" / "feedback" / "bob.html").as_uri(), ready="true")
    dom = browser.dom()
    yours = re.search(r'<pre class="yours">(.*?)</pre>', dom, re.S)  # bob's softmax_grad: the lines it is about
    assert yours and "def softmax_grad(W, b, x, y):" in yours.group(1) and "p - y" in yours.group(1), dom[-3000:]


def test_a_re_run_grades_only_what_changed(graded, tmp_path):
    import shutil

    root = tmp_path / "again"
    shutil.copytree(graded, root, symlinks=True)
    (root / "subs" / "bob" / "src" / "softmax_grad.py").write_text(solution("mnist.softmax_grad", SOFTMAX_RIGHT))
    proc = subprocess.run([sys.executable, "-m", "gradlab", "grade", "subs", "--course", "course.toml", "--out", "out"],
                          cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "grading 1 files of 5 students" in proc.stdout and "9 unchanged since the last run, kept" in proc.stdout
    assert re.findall(r"^\[1/1\] (\S+):", proc.stdout, re.M) == ["bob/softmax_grad.py"]
    rows = {r["student"]: r for r in csv.DictReader((root / "out" / "grades.csv").open())}
    assert rows["bob"]["mnist.softmax_grad (10)"] == "10" and rows["alice"]["total (14)"] == "14"
    first = json.loads((graded / "out" / "results.json").read_text())
    assert json.loads((root / "out" / "results.json").read_text())["seed"] == first["seed"]


# -------------------------------------------------------------------- answers kept from students


@pytest.mark.parametrize("name", list(all_exercises()))
def test_the_answers_a_student_has_are_the_ones_listed(name):
    """Every function and class of a lesson's folder that the wheel ships (the lesson's code, and the references in
    its exercises/checks.py) or that those import from gradlab, run through the exercise's check as a submission:
    what passes is the list its lesson declares (LessonInfo.passes_check), and gradlab grade's note names it (the
    wheel's checks.py references answered clip.clip_across_ranks, ddp.* and mnist.LogSoftmax, copied, and the note
    named none of them)."""
    from answered import answered

    found = answered(name)
    exercise = all_exercises()[name]
    assert sorted(found) == sorted(LESSONS[exercise.lesson].passes_check.get(exercise.function, ())), (name, found)
    note = course.lesson_answer_note(name)
    assert all(where.rpartition(".")[2] in note for where in found) if found else True, note


def test_model_answers_are_left_out_of_the_wheel():
    from conftest import REPO, tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert "gradlab/lessons/*/exercises/answers.py" in config["exclude"]
    answers = sorted(REPO.glob("gradlab/lessons/*/exercises/answers.py"))
    assert len(answers) == len({e.lesson for e in all_exercises().values()})  # the repository keeps one per lesson


def test_what_is_graded_is_the_bytes_that_were_hashed(tmp_path, monkeypatch):
    """TOCTOU: tasks() hashed the file, the check read it again later; a student who swapped in a right file while
    it was graded (and back after) kept its 10 of 10 under the wrong file's digest on every re-run."""
    from gradlab.practice.judging import check

    (tmp_path / "subs" / "mallory").mkdir(parents=True)
    path = tmp_path / "subs" / "mallory" / "softplus.py"
    path.write_bytes(b"def softplus(x):\n    return x * 0  # wrong\n")
    [task] = gradebook.tasks(str(tmp_path / "subs"), [course.Item("softplus.py", "log1pexp.softplus")], False)
    path.write_bytes(b"def softplus(x):\n    return x  # swapped in\n")
    seen = []

    def fake(submission, seed=0):
        seen.append(submission.source)
        return check.stopped_result(submission.exercise, submission.shown, "not run", seed)

    monkeypatch.setattr(check, "run_check", fake)
    gradebook.grade_all([task], 0, "version", {}, lambda *progress: None)
    assert seen == [b"def softplus(x):\n    return x * 0  # wrong\n"]
    assert task.digest == hashlib.sha256(seen[0]).hexdigest()


def test_a_folder_and_a_file_of_the_same_name_are_two_students(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "sgd_step.py").write_text("a\n")
    (tmp_path / "alice.py").write_text("b\n")
    found = gradebook.tasks(str(tmp_path), [course.Item("sgd_step.py", "mnist.sgd_step")], by_file=True)
    assert sorted(t.student for t in found) == ["alice", "alice.py"]


@pytest.mark.parametrize("what", ["submissions", "out"])
def test_a_wrong_path_is_one_line(tmp_path, what):
    (tmp_path / "subs").mkdir()
    (tmp_path / "file").write_text("x\n")
    subs, out = (tmp_path / "file", tmp_path / "out") if what == "submissions" else (tmp_path / "subs",
                                                                                     tmp_path / "file")
    result = invoke("grade", str(subs), "--exercise", "mnist.sgd_step", "--out", str(out))
    assert_one_line_error(result, "is not a folder" if what == "submissions" else "is a file")


# -------------------------------------------------------------------- a teacher's own exercise
OWN = Path(__file__).resolve().parent.parent / "examples" / "own-exercise"
MSE_RIGHT = "r = X @ w + b - y\nreturn 2 * X.T @ r / len(y), 2 * r.mean()"


@pytest.fixture
def own_course(tmp_path):
    """The worked example copied out (a test may change it); all_exercises() as it was, afterwards."""
    import shutil

    before = dict(all_exercises())
    shutil.copytree(OWN, tmp_path / "course")
    yield tmp_path / "course"
    all_exercises().clear()
    all_exercises().update(before)
    for name in [m for m in sys.modules if m.startswith("gradlab_own_")]:
        del sys.modules[name]


def test_an_own_exercise_is_judged_as_gradlabs_are(own_course):
    items = course.read(str(own_course / "course.toml"))
    assert [i.exercise for i in items] == ["linreg.mse_grad", "mnist.softmax_grad"]
    checks = checks_of(all_exercises()["linreg.mse_grad"])
    right = judged("linreg.mse_grad", solution("linreg.mse_grad", MSE_RIGHT))
    assert right.exit_code == 0, [(c.text, c.value) for c in right.claims]
    for mistake in checks.mistakes:  # the teacher's known mistakes, by name
        cases = checks.cases(0)
        r = judge(all_exercises()["linreg.mse_grad"], Reference(checks, cases, [checks.run(None, c) for c in cases]),
                  Received(ok=True, outputs=[checks.call(mistake.fn, c) for c in cases]))
        assert r.metrics["diagnosis"].startswith(f"{mistake.name}: "), r.metrics.get("diagnosis")
    flipped = judged("linreg.mse_grad", solution("linreg.mse_grad", MSE_RIGHT.replace("X @ w + b - y",
                                                                                       "y - X @ w - b")))
    assert "the sign is flipped" in flipped.metrics["diagnosis"]  # gradlab's general experiments, not the teacher's


def test_an_own_exercise_gets_a_starter(own_course, tmp_path):
    out = invoke("exercise", "linreg.mse_grad", "--course", str(own_course / "course.toml"), "--out",
                 str(tmp_path / "mse_grad.py"))
    assert out.exit_code == 0, out.output
    text = (tmp_path / "mse_grad.py").read_text()
    assert "def mse_grad(w, b, X, y):" in text and "∂cost/∂w = 2 Xᵀr / N" in text
    assert "gradlab check mse_grad.py --course course.toml" in text and "NotImplementedError" in text


@pytest.mark.parametrize(("change", "fragment"), [
    (lambda c: (c / "linreg" / "checks.py").unlink(), "has no checks.py"),
    (lambda c: (c / "linreg" / "harness.py").write_text("from gradlab.practice.judging.check import judge\n"),
     "imports gradlab.practice.judging.check, which does not exist in the sandbox"),
    (lambda c: (c / "course.toml").write_text('own = ["nowhere"]\n[exercises]\n"a.py" = "mnist.sgd_step"\n'),
     "is not a folder"),
    (lambda c: (c / "linreg" / "__init__.py").write_text("EXERCISES = []\n"), "declares no EXERCISES"),
    (lambda c: (c / "linreg" / "checks.py").write_text((c / "linreg" / "checks.py").read_text().replace(
        '    """Autograd\'s gradient', '    undefined_name\n    """Autograd\'s gradient')),
     "the course's own exercise linreg.mse_grad is broken"),
])
def test_a_bad_own_folder_is_one_line(own_course, change, fragment):
    change(own_course)
    (own_course / "subs").mkdir()
    out = invoke("grade", str(own_course / "subs"), "--course", str(own_course / "course.toml"), "--out",
                 str(own_course / "out"))
    assert_one_line_error(out, fragment)


PEEK = '''
import os


def mse_grad(w, b, X, y):  # right, and it looks for the teacher's reference
    seen = []
    for path in @PATHS@:
        try:
            with open(path) as f:
                seen.append(path + ": " + f.read(40))
        except OSError:
            pass
    print("PEEK", seen)
    r = X @ w + b - y
    return 2 * X.T @ r / len(y), 2 * r.mean()
'''


def test_an_own_exercise_runs_in_the_sandbox_without_its_checks(tmp_path):
    """Checked for real: the student's code runs in the sandbox with the teacher's harness and nothing else of the
    course folder (the reference in checks.py stays out of its reach)."""
    import shutil

    require_sandbox()
    shutil.copytree(OWN, tmp_path / "course")
    os.chmod(tmp_path / "course", 0o700)  # as the README asks (the uid fallback reads what others may read)
    folder = tmp_path / "course" / "linreg"
    paths = [str(folder / "checks.py"), str(folder / "__init__.py"), "/pkg/gradlab_own_linreg/checks.py"]
    (tmp_path / "mse_grad.py").write_text(PEEK.replace("@PATHS@", repr(paths)))
    proc = subprocess.run([sys.executable, "-m", "gradlab", "check", str(tmp_path / "mse_grad.py"), "--course",
                           str(tmp_path / "course" / "course.toml"), "--json", str(tmp_path / "r.json")],
                          capture_output=True, text=True, timeout=300)
    data = json.loads((tmp_path / "r.json").read_text())
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
    assert "PEEK []" in data["metrics"]["printed"], data["metrics"]["printed"]
    assert data["metrics"]["sandbox"] in ("bwrap", "uid")


def test_gradescope_gets_a_test_per_exercise_with_the_courses_points():
    from gradlab.practice.classroom import course_files

    wrong = judged("mnist.softmax_grad", solution("mnist.softmax_grad", SOFTMAX_NO_B))
    in_place = judged("mnist.softmax_grad", solution("mnist.softmax_grad", SOFTMAX_IN_PLACE))
    for r, name in ((wrong, "a.py"), (in_place, "b.py")):
        r.config = {"file": name}
    item = course.Item("softmax_grad.py", "mnist.softmax_grad", points=20)
    scores = [course.score(wrong, item), course.score(in_place, item)]
    data = json.loads(course_files.gradescope([wrong, in_place], scores))
    assert [(t["score"], t["max_score"]) for t in data["tests"]] == [(0, 20), (15, 20)]
    assert data["score"] == 15 and data["extra_data"] == {"max_score": 40}  # Gradescope's page lists no max_score
    assert [t["status"] for t in data["tests"]] == ["failed", "failed"]
    assert "/B forgotten" in data["tests"][0]["output"] and "✗ your hand-derived gradient" in data["tests"][0]["output"]


def test_a_students_name_is_one_line_whatever_their_folder_is_called(tmp_path):
    (tmp_path / "eve\nFAKE [1 of 1] line\x1b[2J").mkdir()
    found = gradebook.tasks(str(tmp_path), [course.Item("sgd_step.py", "mnist.sgd_step")], by_file=False)
    assert [t.student for t in found] == ["eve\\nFAKE [1 of 1] line\\x1b[2J"]


def test_an_interrupted_run_keeps_what_it_graded(tmp_path, monkeypatch):
    """Ctrl-C half way: results.json holds what was graded, and the next run grades the rest only. The sandbox is
    replaced by a stand-in here (what is tested is the bookkeeping)."""
    import threading
    from types import SimpleNamespace

    from gradlab.practice.classroom import pool
    from gradlab.practice.judging import check
    from gradlab.practice.sandbox import box, modes

    calls = []
    stopping = threading.Event()  # set by the stop (pool.grade_all calls box.stop_all())

    def fake(submission, seed, stop_on=None):
        import time

        calls.append(submission.shown)  # list.append is atomic: the two workers' calls are all counted
        n = int(submission.shown.split("/")[0][1:])  # s6/sgd_step.py: student s6
        if stop_on is not None and n == stop_on:  # by file, not by a count two threads race on
            raise KeyboardInterrupt
        if stop_on is not None and n > stop_on:  # started beside the stopping one: it ends only once gradlab has
            stopping.wait(30)  # stopped (a check outlasts a Ctrl-C's handling), whatever the threads' timing
        time.sleep(0.05)  # a check takes a while
        return check.stopped_result(submission.exercise, submission.shown, "stand-in", seed)

    monkeypatch.setattr(modes, "detect", lambda: SimpleNamespace(isolated=True, mode="bwrap", why=""))
    monkeypatch.setattr(box, "_STOPPING", stopping)  # the stop kills this process's sandboxes: none after
    monkeypatch.setattr(pool, "at_once", lambda: 2)  # two at a time whatever the machine: the counts below assume it
    for i in range(10):
        (tmp_path / f"s{i}.py").write_text(f"# {i}\n")
    args = ("grade", str(tmp_path), "--exercise", "mnist.sgd_step", "--out", str(tmp_path / "out"))
    monkeypatch.setattr(check, "result_of", lambda s, seed: fake(s, seed, stop_on=6))
    first = invoke(*args)
    assert first.exit_code == 130  # s6, the 7th file in order, is a Ctrl-C
    assert len(calls) <= 7 + 1  # the files not started when it stopped are not graded (the other worker's one is)
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    kept = sum(len(v) for v in saved["students"].values())
    assert saved["partial"] and 4 <= kept < 10
    # the outputs are the partial set, said in one line and on the class page (before: none, or the last run's
    # grades.csv and class.html beside a partial results.json, with no warning)
    rows = list(csv.reader(io.StringIO((tmp_path / "out" / "grades.csv").read_text(), newline="")))
    assert len(rows) == 1 + kept and "PARTIAL: " in (tmp_path / "out" / "class.html").read_text()
    said = [line for line in first.output.splitlines() if "partial set" in line]
    assert len(said) == 1 and f"{kept} of 10 students graded in full" in said[0], first.output
    calls.clear()
    monkeypatch.setattr(box, "_STOPPING", threading.Event())
    monkeypatch.setattr(check, "result_of", fake)
    again = invoke(*args)
    assert again.exit_code == 0 and f"({kept} unchanged since the last run, kept)" in again.output
    assert len(calls) == 10 - kept
    final = json.loads((tmp_path / "out" / "results.json").read_text())
    assert "partial" not in final and len(final["students"]) == 10 and final["seed"] == saved["seed"]


@pytest.fixture
def stand_in(monkeypatch):
    """gradlab grade with its sandbox replaced by a stand-in whose every file scores 10 of 10 (what is tested is the
    bookkeeping): the names of the files it was asked to check."""
    import threading
    from types import SimpleNamespace

    from gradlab.practice.judging import check
    from gradlab.practice.sandbox import box, modes

    calls = []

    def fake(submission, seed):
        calls.append(submission.shown)
        return check.stopped_result(submission.exercise, submission.shown, "stand-in", seed)

    monkeypatch.setattr(modes, "detect", lambda: SimpleNamespace(isolated=True, mode="bwrap", why=""))
    monkeypatch.setattr(box, "_STOPPING", threading.Event())
    monkeypatch.setattr(check, "result_of", fake)
    monkeypatch.setattr(gradebook, "score", lambda result, item: course.Score(10.0, 10.0, "stand-in"))
    return calls


def test_overrides_and_late_penalties_survive_a_re_run_and_one_student_is_regraded(tmp_path, stand_in):
    """overrides.csv and submitted.csv beside course.toml, applied on every run and shown in every file written (a
    re-run rewrote grades.csv from the checks alone: a teacher's change did not survive); --student regrades one."""
    for name in ("alice", "bob", "carol"):
        (tmp_path / "subs" / name).mkdir(parents=True)
        (tmp_path / "subs" / name / "sgd_step.py").write_text(f"# {name}\n")
    (tmp_path / "course.toml").write_text('[grading]\ndue = 2026-12-01T23:59:00+01:00\nlate_per_day = 0.1\n'
                                          'late_cap = 0.5\n[exercises]\n"sgd_step.py" = "mnist.sgd_step"\n')
    (tmp_path / "overrides.csv").write_text("student,exercise,points,penalty,reason\n"
                                            "alice,mnist.sgd_step,8,,regrade request: <b>\n"
                                            "carol,sgd_step.py,,1,a late-night typo\n")
    (tmp_path / "submitted.csv").write_text("student,time\nbob,2026-12-03T08:00:00+01:00\n"
                                            "alice,2026-12-01T10:00:00+01:00\n")
    args = ("grade", str(tmp_path / "subs"), "--course", str(tmp_path / "course.toml"), "--out", str(tmp_path / "out"))
    out = tmp_path / "out"
    for _ in range(2):  # the second run keeps every record: the adjustments are made again from what it gave
        result = invoke(*args)
        assert result.exit_code == 0, result.output
        rows = {r[0]: r for r in csv.reader(io.StringIO((out / "grades.csv").read_text(), newline=""))}
        assert rows["student"][-1] == "adjusted"
        assert rows["alice"][1:3] == ["8", "8"] and "overridden by the teacher: 8 points, which replaces the check's " \
            "10 (regrade" in rows["alice"][3]
        assert rows["bob"][1:3] == ["8", "8"] and ("late: handed in 2026-12-03T08:00:00+01:00 (submitted.csv), 1 day "
                                                   "8 h 1 min after the due date 2026-12-01T23:59:00+01:00, 2 started "
                                                   "days × 10 %: −2 points") in rows["bob"][3]
        assert rows["carol"][1] == "9" and rows["carol"][3].endswith("−1 point (a late-night typo)")
        canvas = {r[0]: r for r in csv.reader(io.StringIO((out / "canvas.csv").read_text(), newline=""))}
        assert canvas["alice"][4] == "8" and "overridden" in canvas["alice"][3]
        page = (out / "class.html").read_text()
        assert page.count("✎") == 3 and "Adjusted after the check" in page and "<b>" not in page
        md = (out / "feedback" / "bob.md").read_text()
        assert "**Adjusted** (the check gave 10): late: handed in 2026-12-03T08:00:00+01:00" in md
        assert "Adjusted</b> (the check gave 10)" in (out / "feedback" / "alice.html").read_text()
        page = html.unescape(page)
        assert f"Note: {course.lesson_answer_note('mnist.sgd_step')}" in page  # the terminal's note, on the page too
    assert len(stand_in) == 3  # graded once: the re-run kept every record
    result = invoke(*args, "--student", "bob")
    assert result.exit_code == 0 and stand_in[3:] == ["bob/sgd_step.py"], (result.output, stand_in)
    assert invoke(*args, "--student", "dave").exit_code == 2
    (tmp_path / "overrides.csv").write_text("student,exercise,points,penalty,reason\nalice,mnist.sgd_step,8,1,x\n")
    assert_one_line_error(invoke(*args), "overrides.csv line 2: give points (the score) or penalty")

def test_a_canvas_late_marker_takes_no_invented_time_and_submitted_csv_gives_one(tmp_path, stand_in):
    """Canvas's download says LATE but not when (lib/content_zipper.rb: the name's marker; the zip's entry times are
    when the zip was made): no penalty is made up from it, a note names the student, and a time in submitted.csv
    applies the policy. A file's own time (what unzip sets) is never read: an old mtime changes nothing."""
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in ("leeann_LATE_222_333_sgd_step.py", "smithjohn_12345_67890_sgd_step.py", "late_44_55_sgd_step.py"):
        (subs / name).write_text("# x\n")
        os.utime(subs / name, (1_800_000_000, 1_800_000_000))  # 2027-01-15: weeks after the due date
    (tmp_path / "course.toml").write_text('[grading]\ndue = 2026-12-01T23:59:00+01:00\nlate_per_day = 0.1\n'
                                          '[exercises]\n"sgd_step.py" = "mnist.sgd_step"\n')
    args = ("grade", str(subs), "--course", str(tmp_path / "course.toml"), "--out", str(tmp_path / "out"))
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    note = [line for line in result.output.splitlines() if "LATE" in line]
    assert note == ["gradlab: note: Canvas marked 1 student's files LATE (leeann), which says late but not by how "
                    "long: no late penalty was taken from them; give their times in submitted.csv to apply the late "
                    "policy"], result.output  # a student whose name is "late" is not marked
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "out" / "grades.csv").open(encoding="utf-8"))}
    assert {s: r["total (10)"] for s, r in rows.items()} == {"leeann": "10", "smithjohn": "10", "late": "10"}
    assert "Note: " + note[0].removeprefix("gradlab: note: ") in html.unescape((tmp_path / "out" / "class.html")
                                                                             .read_text())  # on the page too
    (tmp_path / "submitted.csv").write_text("student,time\nleeann,2026-12-03T08:00:00+01:00\n")
    result = invoke(*args)
    assert result.exit_code == 0 and "LATE" not in result.output, result.output
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "out" / "grades.csv").open(encoding="utf-8"))}
    assert rows["leeann"]["total (10)"] == "8" and "(submitted.csv; Canvas marked the file LATE), 1 day 8 h 1 min " \
        "after the due date" in rows["leeann"]["adjusted"]
    assert rows["smithjohn"]["total (10)"] == "10"



def _class_of(tmp_path: Path, files: dict[str, str], overrides: str, submitted: str = "") -> tuple:
    """A class of one sgd_step.py per student (FILES: {student: its text}), due 2026-12-01T23:59:00+01:00 with 10 % a
    started day, OVERRIDES and SUBMITTED beside its course file: the arguments of `gradlab grade` and its output
    folder."""
    for name, text in files.items():
        (tmp_path / "subs" / name).mkdir(parents=True, exist_ok=True)
        (tmp_path / "subs" / name / "sgd_step.py").write_text(text)
    (tmp_path / "course.toml").write_text('[grading]\ndue = 2026-12-01T23:59:00+01:00\nlate_per_day = 0.1\n'
                                          '[exercises]\n"sgd_step.py" = "mnist.sgd_step"\n')
    (tmp_path / "overrides.csv").write_text(overrides)
    if submitted:
        (tmp_path / "submitted.csv").write_text(submitted)
    out = tmp_path / "out"
    return ("grade", str(tmp_path / "subs"), "--course", str(tmp_path / "course.toml"), "--out", str(out)), out


def _grades(out: Path) -> dict[str, dict]:
    return {r["student"]: r for r in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}


def test_an_override_is_for_the_file_it_was_written_for(tmp_path, stand_in):
    """#44: bob's override stayed on his resubmission, his page showing every check ✓ beside "overridden". A row is
    tied to the file it was first applied to (overrides.csv's for_file, filled by gradlab); once the file changed, it
    is not applied and one line says so (terminal and class.html), until its for_file cell is emptied."""
    args, out = _class_of(tmp_path, {"bob": "# first\n", "carol": "# c\n"},
                          "student,exercise,points,penalty,reason\nbob,sgd_step.py,6,,half of it copied\n"
                          "carol,sgd_step.py,,1,a typo\n")
    result = invoke(*args)
    assert result.exit_code == 0 and _grades(out)["bob"]["total (10)"] == "6", result.output
    rows = list(csv.DictReader((tmp_path / "overrides.csv").open(encoding="utf-8")))
    digest = hashlib.sha256(b"# first\n").hexdigest()[:16]
    assert rows[0]["for_file"].startswith(f"{digest} graded 20") and rows[0]["reason"] == "half of it copied"
    assert rows[1]["for_file"].startswith(hashlib.sha256(b"# c\n").hexdigest()[:16])
    (tmp_path / "subs" / "bob" / "sgd_step.py").write_text("# resubmitted\n")
    result = invoke(*args)
    assert result.exit_code == 0 and _grades(out)["bob"]["total (10)"] == "10", result.output
    when = rows[0]["for_file"].split(" graded ", 1)[1]
    line = (f"bob's override of sgd_step.py (6) is for the file graded on {when}; the file changed: regraded 10, "
            "override not applied — update or remove its row in overrides.csv (line 2; an empty for_file cell ties "
            "it to this file)")
    assert result.output.count(line) == 1 and "Note: " + line in html.unescape((out / "class.html").read_text())
    assert "overridden" not in (out / "feedback" / "bob.md").read_text()
    assert _grades(out)["carol"]["total (10)"] == "9"  # carol's file did not change: her row still holds
    assert list(csv.DictReader((tmp_path / "overrides.csv").open(encoding="utf-8"))) == rows  # left as it was
    (tmp_path / "overrides.csv").write_text("student,exercise,points,penalty,reason,for_file\n"
                                            "bob,sgd_step.py,7,,half of it copied,\n")
    result = invoke(*args)
    assert _grades(out)["bob"]["total (10)"] == "7" and "override of" not in result.output, result.output
    assert next(csv.DictReader((tmp_path / "overrides.csv").open(encoding="utf-8")))["for_file"].startswith(
        hashlib.sha256(b"# resubmitted\n").hexdigest()[:16])


def test_an_override_says_what_it_replaces_and_a_late_time_its_source(tmp_path, stand_in):
    """#44: dave's override to 9 silently cancelled his late penalty and his feedback said "(the check gave 10)"
    twice; a time 1 day 8 h late was said "2 days after", its source unsaid (a git commit's time is the student's
    clock)."""
    args, out = _class_of(tmp_path, {"dave": "# d\n", "erin": "# e\n"},
                          "student,exercise,points,penalty,reason\ndave,sgd_step.py,9,,regrade request\n",
                          "student,time\ndave,2026-12-03T08:00:00+01:00\n")
    subprocess.run(["git", "init", "-q", str(tmp_path / "subs" / "erin")], check=True)
    subprocess.run(["git", "-C", str(tmp_path / "subs" / "erin"), "-c", "user.name=e", "-c", "user.email=e@x",
                    "commit", "-q", "--allow-empty", "-m", "x"], check=True,
                   env={**os.environ, "GIT_COMMITTER_DATE": "2026-12-02T02:59:00+01:00"})
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    rows = _grades(out)
    assert rows["dave"]["total (10)"] == "9" and rows["dave"]["adjusted"] == (
        "mnist.sgd_step: late: handed in 2026-12-03T08:00:00+01:00 (submitted.csv), 1 day 8 h 1 min after the due "
        "date 2026-12-01T23:59:00+01:00, 2 started days × 10 %: −2 points; mnist.sgd_step: overridden by the teacher: "
        "9 points, which replaces the check's 10 and the late penalty's −2 (regrade request)")
    assert (out / "feedback" / "dave.md").read_text().count("the check gave 10") == 1
    assert rows["erin"]["total (10)"] == "9" and rows["erin"]["adjusted"] == (
        "mnist.sgd_step: late: handed in 2026-12-02T02:59:00+01:00 (git commit time: the student's own clock, not "
        "verified), 3 h after the due date 2026-12-01T23:59:00+01:00, 1 started day × 10 %: −1 point")
    assert "(git commit time: the student's own clock, not verified), 3 h after" in html.unescape(
        (out / "class.html").read_text())


@pytest.mark.parametrize(("seconds", "said"), [(32 * 3600, "1 day 8 h"), (3 * 86400 + 60, "3 days 1 min"),
                                                (40, "40 s"), (3 * 3600 + 5 * 60, "3 h 5 min")])
def test_a_late_time_is_said_as_long_as_it_is(seconds, said):
    import datetime

    assert adjust.duration(datetime.timedelta(seconds=seconds)) == said

# A student's file that, while its sandbox runs beside a classmate's, plants files wherever gradlab or the classmate's
# sandbox would read them: the shared temporary folders, the classmate's sandbox through /proc, and the host paths of
# the class (as if leaked): the output folder, the course folder (an overrides.csv there would change the gradebook
# on the next run), the classmate's folder, the records. A right answer besides.
PLANTER = """
import json, os, time

TAG, TARGETS = @TAG@, @TARGETS@
wrote, t0 = set(), time.time()
while time.time() - t0 < 4:
    own = [d + "/" + TAG for d in ("/tmp", "/dev/shm", "/var/tmp", os.getcwd())]
    peers = [f"/proc/{p}/{via}/{TAG}" for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()
             for via in ("root/tmp", "root/dev/shm", "cwd")]
    for path, text in [*TARGETS.items(), *((p, "planted " + TAG) for p in own + peers)]:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError:
            pass
        try:
            with open(path, "w") as f:
                f.write(text)
            wrote.add(path)
        except OSError:
            pass
    time.sleep(0.05)
print("ATTACK " + json.dumps({"t0": t0, "t1": time.time(), "wrote": sorted(wrote)}), flush=True)
"""
# The classmate: a right answer that, while the other runs, looks for what was planted where it could read it.
PROBE = """
import json, os, time

TAG, seen, t0 = @TAG@, set(), time.time()
while time.time() - t0 < 3:
    for d in ("/tmp", "/dev/shm", "/var/tmp", os.getcwd()):
        try:
            seen |= {d + "/" + n for n in os.listdir(d) if TAG in n}
        except OSError:
            pass
    time.sleep(0.05)
print("PROBE " + json.dumps({"t0": t0, "t1": time.time(), "seen": sorted(seen)}), flush=True)
"""


def test_a_planting_student_reaches_neither_a_classmate_nor_the_gradebook(tmp_path, monkeypatch):
    """Two sandboxes at once in one real `gradlab grade`: the planter's files reach neither the classmate's sandbox
    (it sees none of them while both run) nor the host (no file of it anywhere after: the class, the course, the
    output, the shared temporary folders, gradlab's package), and the classmate's grade, feedback and record are what
    their file earns. Two sandbox starts."""
    from gradlab.practice.classroom import pool

    mode = require_sandbox()
    monkeypatch.setattr(pool, "at_once", lambda: 2)  # side by side, whatever this machine's CPUs
    tag = f"gl-plant-{os.getpid()}"
    subs, course_dir, out = tmp_path / "subs", tmp_path / "course", tmp_path / "out"
    for folder in (subs / "mallory", subs / "victim", course_dir):
        folder.mkdir(parents=True)
    os.chmod(tmp_path, 0o700)  # the uid fallback grades only folders other users cannot read
    course_toml = '[exercises]\n"sgd_step.py" = "mnist.sgd_step"\n'
    (course_dir / "course.toml").write_text(course_toml)
    package = Path(__import__("gradlab").__file__).parent
    targets = {str(course_dir / "overrides.csv"): "student,exercise,points,penalty,reason\nvictim,sgd_step.py,0,,x\n",
               str(course_dir / "submitted.csv"): "student,time\nvictim,2030-01-01T00:00:00+00:00\n",
               str(course_dir / "course.toml"): "planted", str(subs / "victim" / "sgd_step.py"): "planted",
               str(subs / "victim" / tag): "planted", str(out / "results.json"): '{"planted": 1}',
               str(out / "grades.csv"): "planted", str(out / "feedback" / "victim.md"): "planted",
               str(out / tag): "planted", str(package / tag): "planted"}
    victim = solution("mnist.sgd_step", SGD_RIGHT) + PROBE.replace("@TAG@", repr(tag))
    (subs / "victim" / "sgd_step.py").write_text(victim)
    (subs / "mallory" / "sgd_step.py").write_text(solution("mnist.sgd_step", SGD_RIGHT) + PLANTER.replace(
        "@TAG@", repr(tag)).replace("@TARGETS@", repr(targets)))
    try:
        result = invoke("grade", str(subs), "--course", str(course_dir / "course.toml"), "--out", str(out))
        left = [str(p) for root in (tmp_path, Path("/tmp"), Path("/dev/shm"), Path("/var/tmp"), package)
                for p in root.glob(f"**/{tag}" if root == tmp_path else tag)]
    finally:
        for root in ("/tmp", "/dev/shm", "/var/tmp", str(package)):
            Path(root, tag).unlink(missing_ok=True)
    assert left == [], left  # nothing planted on the host
    assert not (course_dir / "overrides.csv").exists() and not (course_dir / "submitted.csv").exists()
    assert (course_dir / "course.toml").read_text() == course_toml
    assert (subs / "victim" / "sgd_step.py").read_text() == victim
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    recs = {s: data["students"][s]["sgd_step.py"] for s in ("mallory", "victim")}
    attack = json.loads(recs["mallory"]["printed"].split("ATTACK ", 1)[-1])
    probe = json.loads(recs["victim"]["printed"].split("PROBE ", 1)[-1])
    assert max(attack["t0"], probe["t0"]) < min(attack["t1"], probe["t1"]), (attack, probe)  # they ran at once
    assert probe["seen"] == [], probe  # nor in the classmate's sandbox
    assert recs["victim"]["source"] == victim
    assert recs["victim"]["passed"] and recs["victim"]["score"] == 10 and not recs["victim"]["adjusted"]
    rows = {r["student"]: r["total (10)"] for r in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    assert rows == {"mallory": "10", "victim": "10"}
    for name in ("grades.csv", "canvas.csv", "feedback/victim.md", "feedback/victim.html"):  # the planter's own
        assert "planted" not in (out / name).read_text(encoding="utf-8"), name  # record and page quote its file
    assert sorted(p.name for p in out.rglob("*")) == sorted(["canvas.csv", "class.html", "feedback", "grades.csv",
                                                             "mallory.html", "mallory.md", "results.json",
                                                             "victim.html", "victim.md"])
    print(mode, len(attack["wrote"]), "writes, each inside the planter's own sandbox")


def test_a_changed_own_exercise_grades_the_class_again(tmp_path):
    """What a re-run compares holds a digest of the course's own exercise folders: a teacher who fixes a harness or a
    reference has the class graded again, not the last run's grades kept."""
    import shutil

    from gradlab.practice.classroom.course import own_digest

    shutil.copytree(REPO / "examples" / "own-exercise", tmp_path / "course")
    course = tmp_path / "course" / "course.toml"
    before = own_digest(str(course))
    assert before and own_digest(str(course)) == before
    harness = tmp_path / "course" / "linreg" / "harness.py"
    harness.write_text(harness.read_text() + "\n# the edge case forced\n")
    assert own_digest(str(course)) not in ("", before)
    plain = tmp_path / "plain.toml"
    plain.write_text('[exercises]\n"sgd_step.py" = "mnist.sgd_step"\n')
    assert own_digest(str(plain)) == "" and own_digest(None) == ""


def test_a_file_is_reported_even_when_the_references_cannot_be_made(monkeypatch):
    """A teacher's reference that raises on the course's seed (its seed-0 self-test passed) makes each file a failed
    check said in one line: stopped_result itself never raises, so a folder's grading never waits on a dead thread."""
    from gradlab.practice.judging import check as C

    def broken(exercise, seed):
        raise NameError("name 'undefined_name' is not defined")

    monkeypatch.setattr(C, "references", broken)
    result = C.stopped_result(all_exercises()["mnist.sgd_step"], "sgd_step.py", "gradlab could not check this file")
    assert result.exit_code == 1 and "gradlab could not check this file" in result.stopped


def test_a_checkpoint_saves_the_files_graded_so_far(monkeypatch):
    """Every CHECKPOINT graded files results.json is saved with what was graded (it was saved empty: the records
    the checkpoint read were never filled, so a crash left a gradebook with no student in it)."""
    from gradlab.practice.classroom import grade as grade_module
    from gradlab.practice.classroom import gradebook

    recs = [record(f"s{i}", "softmax_grad.py", score=i) for i in range(6)]

    def fake_grade_all(todo, seed, stamp, old, progress, only=None):
        for i, rec in enumerate(recs):
            progress(i + 1, len(recs), rec, 0.1)
        return {(r["student"], r["file"]): r for r in recs}, None

    monkeypatch.setattr(gradebook, "grade_all", fake_grade_all)
    saved = []
    grade_module._gradebook([], {}, 0, "v", lambda line: None, saved.append)
    assert [sorted(s for s, _ in snapshot) for snapshot in saved] == [["s0", "s1", "s2", "s3"]]
