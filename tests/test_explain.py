"""--explain: short enough for a screen, `--explain full` for the rest, and never an exercise's answer.

`gradlab LESSON --explain` prints the learner part of the lesson's docstring and the code of its EXPLAIN_SHORT; it
must fit 60 lines at 100 columns. `--explain full` prints the whole docstring and the code of every name in EXPLAIN.
Neither may show the code a student is graded on: no function whose body is an exercise's model answer
(gradlab/lessons/*/exercises/answers.py), compared line by line, and no function that passes an exercise's check.
"""

import inspect
import io
import re

import pytest
from conftest import assert_one_line_error, invoke
from rich.console import Console

from gradlab.lessons import LESSONS
from gradlab.practice import all_exercises, answer_source, checks_of
from gradlab.practice.judging.judge import Reference, judge
from gradlab.practice.sandbox.returned import Received
from gradlab.report.explain import explanation, print_explanation, short_names

SCREEN = 60  # lines, at WIDTH columns
WIDTH = 100


def rendered(lesson: str, full: bool = False) -> str:
    console = Console(width=WIDTH, record=True, file=io.StringIO(), color_system=None)
    print_explanation(lesson, console, full=full)
    return console.export_text()


@pytest.mark.parametrize("lesson", list(LESSONS))
def test_the_short_explanation_fits_a_screen_and_says_how_to_see_the_rest(lesson):
    text = rendered(lesson)
    lines = text.splitlines()
    assert len(lines) <= SCREEN, f"gradlab {lesson} --explain prints {len(lines)} lines at {WIDTH} columns"
    after_the_panels = text.rsplit("╯", 1)[1]  # the last line(s), after the last panel's border
    assert f"`gradlab {lesson} --explain full`" in " ".join(after_the_panels.split())


@pytest.mark.parametrize("lesson", list(LESSONS))
def test_full_shows_the_whole_docstring_and_every_snippet(lesson):
    short, full = rendered(lesson), rendered(lesson, full=True)
    assert len(full.splitlines()) > len(short.splitlines())
    module = LESSONS[lesson].load()
    doc, snippets = explanation(module)
    words = " ".join(re.sub(r"[│╭╮╰╯─]", " ", full).split())  # the text without the panels' borders
    last = [line for line in doc.splitlines() if line.strip()][-1]  # the docstring's last line, past its ---
    assert " ".join(last.replace("`", "").split()[-4:]) in words
    for s in snippets:
        assert f"{s.name} — {s.path}:{s.start}" in full, s.name
    assert set(short_names(module)) <= set(module.EXPLAIN), "EXPLAIN_SHORT names what EXPLAIN does not"


def test_the_command_line_takes_explain_alone_or_full():
    short = invoke("jacobian", "--explain", "--quiet")  # --quiet: nothing printed, the explanation included
    assert short.exit_code == 0 and short.output == ""
    short = invoke("jacobian", "--explain")
    full = invoke("jacobian", "--explain", "full")
    assert short.exit_code == full.exit_code == 0, full.output
    assert "hessian_fd — gradlab/lessons/jacobian/lesson.py" in full.output
    assert "hessian_fd — " not in short.output and "--explain full" in short.output
    assert invoke("jacobian", "--explain=full").output.count("hessian_fd — ") == 1
    assert_one_line_error(invoke("jacobian", "--explain", "long"), "--explain")


# -------------------------------------------------------------------- no model answer in what --explain prints
GLOO = {"clip.clip_across_ranks", "ddp.sync_gradients", "ddp.average_gradients"}  # their harness starts workers
# Lines that compute nothing by themselves, the same in any answer of the shape: a no_grad block, an
# autograd.Function's save and restore, an input made a leaf
PLUMBING = re.compile(r"withtorch\.no_grad\(\):|else:|ctx\.save_for_backward\(.*\)|[\w,]+=ctx\.saved_tensors|"
                      r"(\w+)=\1\.detach\(\)\.requires_grad_\(True\)")


def code_lines(source: str) -> list[str]:
    """SOURCE's lines as compared: comments, blank lines, docstring lines, def/class lines and decorators dropped,
    whitespace removed, `(x,) =` read as `x, =`; PLUMBING left out."""
    out = []
    for line in source.splitlines():
        line = re.sub(r"\s+#.*$|^\s*#.*$", "", line).strip()
        if not line or line.startswith(("def ", "class ", "@", '"""', "'''")):
            continue
        line = re.sub(r"^\(([\w, ]+,)\)\s*=", r"\1 =", line)
        line = re.sub(r"\s+", "", line)
        if not PLUMBING.fullmatch(line):
            out.append(line)
    return out


def shown_answers(text: str) -> list[str]:
    """The exercises whose model answer TEXT holds: at least half of the answer's compared lines are lines of TEXT."""
    lines = set(code_lines(text))
    found = []
    for name, exercise in all_exercises().items():
        body = code_lines(answer_source(exercise))
        if body and sum(line in lines for line in body) * 2 >= len(body):
            found.append(name)
    return found


def test_the_answer_detector_finds_every_answer_in_its_own_source():
    """The comparison can fail: each model answer's source is found as itself, whatever its indentation."""
    for name, exercise in all_exercises().items():
        assert name in shown_answers(inspect.cleandoc("\n" + answer_source(exercise))), name


@pytest.mark.parametrize("lesson", list(LESSONS))
def test_explain_shows_no_model_answer(lesson):
    doc, snippets = explanation(LESSONS[lesson].load())  # everything `--explain full` prints, as source
    printed = doc + "\n" + "\n".join(s.code for s in snippets)
    assert not shown_answers(printed), f"gradlab {lesson} --explain full prints these answers: {shown_answers(printed)}"
    # an exercise's function by its name, or a lesson function known to answer one under another name
    exercised = {LESSONS[lesson].answered_by.get(e.function, e.function) for e in all_exercises().values()
                 if e.lesson == lesson}
    assert not exercised & {s.name for s in snippets}, "EXPLAIN names a function that answers an exercise"


@pytest.mark.parametrize("name", [n for n in all_exercises() if n not in GLOO])
def test_no_function_explain_prints_passes_an_exercise(name):
    """What `--explain full` prints, used as it is on an exercise's check cases: none of it may pass."""
    exercise = all_exercises()[name]
    module = LESSONS[exercise.lesson].load()
    arity = exercise.signature.count(",") + 1
    checks = checks_of(exercise)
    cases = checks.cases(0)
    passing = []
    for shown in module.EXPLAIN:
        fn = getattr(module, shown)
        if inspect.isclass(fn) != exercise.signature.startswith("class "):
            continue
        if not inspect.isclass(fn) and len(inspect.signature(fn).parameters) != arity:
            continue
        refs = [checks.run(None, c) for c in cases]
        try:
            outputs = [checks.call(fn, c) for c in cases]
        except Exception:  # a function that cannot even be called this way is no answer
            continue
        reference = Reference(checks=checks, cases=cases, outputs=refs)
        if judge(exercise, reference, Received(ok=True, outputs=outputs)).exit_code == 0:
            passing.append(shown)
    assert not passing, f"gradlab {exercise.lesson} --explain full prints {passing}, which pass {name}"
