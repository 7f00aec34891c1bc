"""Practice: the checker is proved on every exercise. The reference passes; every known wrong answer fails with its
own diagnosis; the untouched starter fails cleanly; a small perturbation of the reference fails (the checks can
fail). The sandbox turns a syntax error, an endless loop, os._exit, megabytes of printing and a huge allocation into
one line each; the real process path runs end to end for a right and a wrong answer."""

import json
import re
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from conftest import assert_one_line_error, check_file, invoke

from gradlab.practice import all_exercises, answer, checks_of
from gradlab.practice.classroom.starter import starter
from gradlab.practice.judging.judge import Reference, judge
from gradlab.practice.sandbox import box as sandbox_box
from gradlab.practice.sandbox import files as sandbox_files
from gradlab.practice.sandbox.returned import Received

NAMES = list(all_exercises())
CHECKS = {name: checks_of(e) for name, e in all_exercises().items()}


def judged(name: str, fn) -> "object":
    """The Result for FN as if it had run in the sandbox (its outputs through the exercise's harness)."""
    checks = CHECKS[name]
    cases = checks.cases(0)
    refs = [checks.run(None, c) for c in cases]
    return judge(all_exercises()[name], Reference(checks, cases, refs),
                 Received(ok=True, outputs=[checks.call(fn, c) for c in cases]))


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_passes(name):
    """A "no autograd" exercise's reference may be autograd (gaussian-policy.score's: what its claim compares with,
    and no closed form in the wheel for a student to copy), which breaks the student's rule by design: its model
    answer stands in for it."""
    exercise = all_exercises()[name]
    r = judged(name, answer(exercise) if exercise.no_autograd else CHECKS[name].reference)
    assert r.exit_code == 0 and r.claims and "diagnosis" not in r.metrics, [(c.text, c.value) for c in r.claims]


@pytest.mark.parametrize(("name", "mistake"), [(n, m.name) for n in NAMES for m in CHECKS[n].mistakes])
def test_every_known_mistake_fails_with_its_own_diagnosis(name, mistake):
    m = next(m for m in CHECKS[name].mistakes if m.name == mistake)
    r = judged(name, m.fn)
    assert r.exit_code == 1 and r.metrics["diagnosis"].startswith(f"{mistake}: "), r.metrics.get("diagnosis")


def perturb(out, rel: float = 1e-3):
    if isinstance(out, dict):
        return {k: perturb(v, rel) for k, v in out.items()}
    if isinstance(out, list):
        return [perturb(v, rel) for v in out]
    return out * (1 + rel) + rel * (out == 0)


@pytest.mark.parametrize("name", NAMES)
def test_a_small_perturbation_of_the_reference_fails_and_shows_where(name):
    checks = CHECKS[name]
    cases = checks.cases(0)
    refs = [checks.run(None, c) for c in cases]
    r = judge(all_exercises()[name], Reference(checks, cases, refs),
              Received(ok=True, outputs=[perturb(o) for o in refs]))
    assert r.exit_code == 1 and "first difference" in r.metrics["diagnosis"], r.metrics.get("diagnosis")


def test_diagnosis_names_the_ratio_for_a_forgotten_division_by_k():
    r = judged("ddp.accumulated_grad", CHECKS["ddp.accumulated_grad"].mistakes[0].fn)
    assert "times the full batch's" in r.metrics["diagnosis"]


def solution(name: str, body: str) -> str:
    function = all_exercises()[name].function
    return starter(all_exercises()[name]).replace(f'    raise NotImplementedError("write {function}")',
                                            textwrap.indent(textwrap.dedent(body), "    "))


SGD_RIGHT = """
cost = -(y * F.log_softmax(x @ W + b, dim=1)).sum(dim=1).mean()
gW, gb = torch.autograd.grad(cost, [W, b])
return W - lr * gW, b - lr * gb
"""


def test_exercise_writes_a_starter_that_fails_cleanly_and_a_solution_that_passes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = invoke("exercise", "mnist.sgd_step")
    assert out.exit_code == 0 and (tmp_path / "sgd_step.py").is_file()
    assert_one_line_error(invoke("exercise", "mnist.sgd_step"), "already exists", "--force")
    text = (tmp_path / "sgd_step.py").read_text()
    assert "# gradlab-exercise: mnist.sgd_step" in text and "gradlab check sgd_step.py" in text
    assert "tf.gradients" in text and "raise NotImplementedError" in text
    todo = invoke("check", "sgd_step.py")
    todo_text = " ".join(todo.output.split())
    assert todo.exit_code == 1 and "sgd_step raises NotImplementedError: write its body" in todo_text
    (tmp_path / "sgd_step.py").write_text(solution("mnist.sgd_step", SGD_RIGHT))
    right = invoke("check", "sgd_step.py", "--json", "r.json")
    assert right.exit_code == 0, right.output
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["lesson"] == "check" and all(c["passed"] for c in data["claims"])
    wrong = SGD_RIGHT.replace(".sum(dim=1).mean()", ".sum()")
    (tmp_path / "sgd_step.py").write_text(solution("mnist.sgd_step", wrong))
    bad = invoke("check", "sgd_step.py")
    assert bad.exit_code == 1 and "summed cost: your step is B times too large" in " ".join(bad.output.split())


def test_exercises_lists_every_exercise_also_as_json():
    from gradlab.lessons import LESSONS

    exercises = all_exercises().values()
    assert len(exercises) >= 9 and {e.lesson for e in exercises} == set(LESSONS)  # one per lesson at least
    assert all(len(CHECKS[n].mistakes) >= 3 for n in NAMES)
    out = invoke("exercises", "--json", "-")
    items = json.loads(out.stdout)
    assert [i["name"] for i in items] == NAMES and all({"name", "lesson"} <= set(i) for i in items)
    assert "gradlab exercise NAME" in invoke("exercises").output


@pytest.mark.parametrize(("args", "fragment"), [
    (["check", "nope.py"], "is not a file"),
    (["exercise", "mnist.sgd_stp"], "did you mean mnist.sgd_step?"),
])
def test_bad_usage_is_one_line_and_exit_2(args, fragment):
    assert_one_line_error(invoke(*args), fragment)


HOSTILE = {
    "syntax": ("cost = = 1", "syntax error at line"),
    "loop": ("while True:\n    pass", "ran longer than 3 s"),
    "exit": ("import os\nos._exit(3)", "ended the process (exit code 3)"),
    "print": ("print('x' * 100_000_000)", "printed more than 64 MB"),
    "alloc": ("x = torch.empty(10**12)", "raised on the input"),
    "import": ("import no_such_module_anywhere", "No module named 'no_such_module_anywhere'"),
}


def test_hostile_submissions_are_one_line_each(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox_box, "TIMEOUT_S", 3.0)
    files = {}
    for key, (body, _) in HOSTILE.items():
        path = tmp_path / f"{key}.py"
        code = solution("mnist.sgd_step", body + "\n" + SGD_RIGHT)
        path.write_text(code.replace("import torch\n", "import torch\n" + body + "\n") if key == "import" else code)
        files[key] = path
    with ThreadPoolExecutor(2) as pool:
        results = dict(zip(files, pool.map(lambda p: check_file(p, "mnist.sgd_step"),
                                           files.values()), strict=True))
    for key, (_, fragment) in HOSTILE.items():
        r = results[key]
        assert r.exit_code == 1 and r.stopped and "\n" not in r.stopped and fragment in r.stopped, (key, r.stopped)


def test_a_students_traceback_is_cut_to_their_own_file(tmp_path):
    path = tmp_path / "s.py"
    path.write_text(solution("mnist.sgd_step", "return helper(W)") + "\n\ndef helper(W):\n    return W[99999]\n")
    r = check_file(path, "mnist.sgd_step")
    assert "IndexError" in r.stopped and "line" in r.stopped
    trace = r.metrics["trace"]
    assert str(path) in trace and "gradlab/practice" not in trace and "return W[99999]" in trace


@pytest.mark.parametrize("name", NAMES)
def test_every_starter_imports_and_fails_cleanly(tmp_path, name):
    """The untouched starter of every exercise: valid Python that names its exercise; its function raises
    NotImplementedError, which the checker reports in one line."""
    path = tmp_path / "s.py"
    path.write_text(starter(all_exercises()[name]))
    compile(path.read_text(), str(path), "exec")
    from gradlab.practice.judging import submission

    assert submission.own(str(path), path.read_bytes(), None).exercise.name == name


def test_perturbation_check_runs_in_float64_too():
    assert CHECKS["mnist.sgd_step"].cases(0)[-1]["W"].dtype == torch.float64


CLIP_RIGHT = """
norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads))
scale = clip_norm / torch.clamp(norm, min=clip_norm)
return [g * scale.to(g.dtype) for g in grads]
"""


SGD_IN_PLACE = """
cost = -(y * F.log_softmax(x @ W + b, dim=1)).sum(dim=1).mean()
gW, gb = torch.autograd.grad(cost, [W, b])
with torch.no_grad():
    W.sub_(lr * gW)  # the right values, but a rule broken: W changed in place
return W.detach().clone(), b - lr * gb
"""


def externally_managed_python(root):
    """A system python3 as Ubuntu 24.04 has it: PEP 668's EXTERNALLY-MANAGED file in its standard library, so a bare
    `pip install` is refused (pip ignores the file only inside a venv). It is this interpreter under a prefix of its
    own: its binary copied, its standard library and this test's packages (torch, …; gradlab's own left out) as hard
    links (a few seconds, no data copied), as an image with torch in its site-packages would have them; so setup.sh's
    venv takes them from it (--system-site-packages) and downloads nothing, and the sandbox, which binds the
    interpreter's prefix, sees them."""
    import os
    import shutil
    import site
    import sys
    from pathlib import Path

    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    prefix = root / "usr"
    stdlib, packages = prefix / "lib" / version, Path(site.getsitepackages()[0])

    def hard_links(src: Path, dst: Path, skip) -> None:
        for entry in src.iterdir():
            if skip(entry.name):
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.copytree(entry, dst / entry.name, copy_function=os.link, symlinks=True)
            else:
                shutil.copy2(entry, dst / entry.name, follow_symlinks=False) if entry.is_symlink() else \
                    os.link(entry, dst / entry.name)

    stdlib.mkdir(parents=True)
    hard_links(Path(sys.base_prefix) / "lib" / version, stdlib, lambda n: n in ("site-packages", "test"))
    (stdlib / "site-packages").mkdir()
    hard_links(packages, stdlib / "site-packages", lambda n: "gradlab" in n.lower() or n == "__pycache__")
    (stdlib / "EXTERNALLY-MANAGED").write_text("[externally-managed]\nError=this Python is managed by the system "
                                               "(a test's stand-in for Ubuntu 24.04's)\n")
    (prefix / "bin").mkdir()
    shutil.copy2(Path(sys.executable).resolve(), prefix / "bin" / "python3")
    return prefix / "bin"


def gradescope_results_problems(data) -> list[str]:
    """What in DATA does not follow results.json as Gradescope documents it ("Autograder Specifications",
    gradescope-autograders.readthedocs.io/en/latest/specs/, "Output format"): a score on the whole or on every test;
    each test's score, max_score, status ("passed"/"failed"), name and output of the types given there; visibility
    one of "hidden", "after_due_date", "after_published", "visible"; no key the page does not list."""
    top = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
           "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
    per_test = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format", "tags",
                "visibility", "extra_data"}
    visibility = {"hidden", "after_due_date", "after_published", "visible"}
    number = (int, float)
    problems = [f"unknown key {k!r}" for k in set(data) - top]
    tests = data.get("tests", [])
    if "score" not in data and not all("score" in t for t in tests):
        problems.append("no score: on the whole or on every test")
    if "score" in data and not isinstance(data["score"], number):
        problems.append(f"score {data['score']!r}")
    problems += [f"{k} {data[k]!r}" for k in ("visibility", "stdout_visibility") if data.get(k, "visible") not in
                 visibility]
    problems += [f"output {data['output']!r}" for _ in [1] if not isinstance(data.get("output", ""), str)]
    for t in tests:
        problems += [f"test key {k!r}" for k in set(t) - per_test]
        problems += [f"test {k} {t[k]!r}" for k in ("score", "max_score") if k in t and not isinstance(t[k], number)]
        problems += [f"test {k} {t[k]!r}" for k in ("name", "output") if k in t and not isinstance(t[k], str)]
        if t.get("status", "passed") not in ("passed", "failed"):
            problems.append(f"test status {t['status']!r}")
        if t.get("visibility", "visible") not in visibility:
            problems.append(f"test visibility {t['visibility']!r}")
    return problems


def test_the_gradescope_autograder_installs_into_a_venv_and_grades_a_submission(tmp_path):
    """setup.sh and run_autograder end to end, in Gradescope's layout (source/, submission/, results/ under
    AUTOGRADER_ROOT), with a system python3 that refuses pip (PEP 668): setup.sh makes a venv and installs the wheel
    (built here, with hatchling) into it, with nothing downloaded (PIP_NO_INDEX); run_autograder grades a right clip,
    an sgd_step with the right values that changes W in place (partial credit) and a file the course does not name;
    results.json follows Gradescope's documented format."""
    import os
    import shutil
    import subprocess
    import sys

    from conftest import REPO, require_sandbox

    require_sandbox()
    system = externally_managed_python(tmp_path / "image")
    refused = subprocess.run([str(system / "python3"), "-m", "pip", "install", "--no-index", "nothing"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "externally-managed-environment" in refused.stderr, refused.stderr[-800:]
    root = tmp_path / "autograder"
    sub, source = root / "submission", root / "source"
    sub.mkdir(parents=True)
    build = subprocess.run([sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(source)], cwd=REPO,
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-2000:]
    for name in ("setup.sh", "run_autograder", "course.toml"):
        shutil.copy(REPO / "examples" / "gradescope" / name, source / name)
    (sub / "sgd_step.py").write_text(solution("mnist.sgd_step", SGD_IN_PLACE))
    (sub / "clip_by_global_norm.py").write_text(solution("clip.clip_by_global_norm", CLIP_RIGHT))
    (sub / "notes.py").write_text("print('not an exercise')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env |= {"AUTOGRADER_ROOT": str(root), "PIP_NO_INDEX": "1", "PATH": f"{system}:/usr/sbin:/usr/bin:/sbin:/bin"}
    setup = subprocess.run(["bash", str(source / "setup.sh")], env=env, capture_output=True, text=True, timeout=600)
    assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
    assert f"made by {system / 'python3'}" in setup.stdout and (root / "gradlab-venv" / "bin" / "gradlab").exists()
    proc = subprocess.run(["bash", str(source / "run_autograder")], env=env, cwd=root, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads((root / "results" / "results.json").read_text())
    assert not gradescope_results_problems(results), (gradescope_results_problems(results), results)
    # a test per exercise, 10 points each (the course file sets none), carried by the claims about the answer: the
    # in-place step keeps its claims and loses a rule's share (deduct 0.25), the file no course names is not graded
    scored = {t["name"].split()[0]: (t["score"], t["max_score"], t["status"]) for t in results["tests"]}
    assert scored == {"mnist.sgd_step": (7.5, 10, "failed"), "clip.clip_by_global_norm": (10, 10, "passed")}, results
    assert results["score"] == 17.5 and results["extra_data"] == {"max_score": 20}, results


def test_results_json_is_checked_against_gradescopes_format():
    """The checker above can fail: each thing Gradescope's page does not allow is named."""
    assert gradescope_results_problems({"score": 1, "tests": [{"score": 1, "max_score": 1, "status": "passed"}]}) == []
    assert gradescope_results_problems({"max_score": 2, "tests": [{"max_score": 1, "status": "ok", "visibility": "x",
                                                                    "score": "1"}]}) == [
        "unknown key 'max_score'", "test score '1'", "test status 'ok'", "test visibility 'x'"]
    assert gradescope_results_problems({"tests": [{"max_score": 1}]}) == ["no score: on the whole or on every test"]


def actionlint() -> str:
    """The actionlint binary (GitHub's workflow syntax, expressions, the inputs and runtimes of known actions) beside
    this Python, where `make install` puts it (requirements-actionlint.txt), or on PATH; the test is skipped without
    one, and fails instead where GRADLAB_REQUIRE_ACTIONLINT is set, as .ci/run sets it."""
    import os
    import shutil
    import sys

    found = shutil.which("actionlint", path=os.path.dirname(sys.executable)) or shutil.which("actionlint")
    if found is None:
        if os.environ.get("GRADLAB_REQUIRE_ACTIONLINT"):
            pytest.fail("GRADLAB_REQUIRE_ACTIONLINT is set but no actionlint is installed")
        pytest.skip("no actionlint on PATH or beside this Python (make install puts it in .venv: "
                    "pip install --require-hashes -r requirements-actionlint.txt)")
    return found


def github_workflows() -> list[str]:
    """Every GitHub workflow the repository holds, its own and the examples', as paths from its root (each file git
    tracks in a .github/workflows folder): a new one is checked without being named here."""
    import subprocess

    from conftest import REPO

    files = subprocess.run(["git", "ls-files", "-z", "--", "*.github/workflows/*.yml", "*.github/workflows/*.yaml"],
                           cwd=REPO, capture_output=True, text=True, check=True).stdout.split("\0")
    return [f for f in files if f]


def test_the_github_workflows_pass_actionlint():
    import subprocess

    from conftest import REPO

    workflows = github_workflows()
    assert {".github/workflows/release.yml", "examples/github-classroom/.github/workflows/classroom.yml",
            "examples/many-machines/.github/workflows/grade.yml"} <= set(workflows), workflows
    # shellcheck and pyflakes off: what actionlint says does not depend on which of them this machine has
    proc = subprocess.run([actionlint(), "-shellcheck=", "-pyflakes=", "-no-color", *workflows], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_github_classroom_workflow_gives_partial_credit_per_exercise(tmp_path, monkeypatch):
    """The workflow's grading command as it stands in classroom.yml, on a repository with course.toml: its result is
    what classroom-resources/autograding-grading-reporter reads (a test per exercise, each with its score and the
    runner's max_score: the reporter's total is the sum of the scores over the sum of the max_scores); it installs
    gradlab from what GRADLAB_SOURCE names, never PyPI's `gradlab`."""
    import re
    import shlex
    import shutil

    from conftest import REPO, require_sandbox

    require_sandbox()
    example = REPO / "examples" / "github-classroom"
    workflow = (example / ".github" / "workflows" / "classroom.yml").read_text()
    assert re.search(r"^  GRADLAB_SOURCE: \./gradlab_teach-[0-9.]+-py3-none-any\.whl$", workflow, re.M), workflow
    assert 'pip install "$GRADLAB_SOURCE"' in workflow and re.findall(r"vars\.\w+", workflow) == [
        "vars.GRADLAB_COURSE_SHA256"]  # GRADLAB_SOURCE is the file's own (above); the course's digest is the teacher's
    assert not re.search(r"pip install [^\n#]*\bgradlab\b(?![-_])", workflow)  # no line installs PyPI's `gradlab`
    command = re.search(r'sudo "\$RUNNER_TEMP/gradlab/bin/gradlab" (check .+?) \|\| test', workflow, re.S).group(1)
    args = shlex.split(command.replace("\\\n", " ").replace("$RUNNER_TEMP", str(tmp_path)))
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    shutil.copy(example / "course.toml", repo / "course.toml")
    (repo / "sgd_step.py").write_text(solution("mnist.sgd_step", SGD_IN_PLACE))
    (repo / "clip_by_global_norm.py").write_text(solution("clip.clip_by_global_norm", CLIP_RIGHT))
    out = invoke(*args)
    assert out.exit_code == 1, out.output  # a check failed: a grade, which the workflow's `|| test $? -eq 1` keeps
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["version"] == 1 and result["status"] == "fail" and result["max_score"] == 20
    tests = {t["name"].split()[0]: t for t in result["tests"]}
    assert {n: (t["status"], t["score"]) for n, t in tests.items()} == {
        "mnist.sgd_step": ("fail", 7.5), "clip.clip_by_global_norm": ("pass", 10)}
    assert sum(t["score"] for t in result["tests"]) == 17.5  # the reporter's "Points 17.5/20"
    # the Actions log's table shows the same points as the result, not one per check ("4 of 5" beside 0 of 10, #44)
    assert re.search(r"│ sgd_step\.py +│ mnist\.sgd_step +│ 7\.5 +│ 10 │", out.output), out.output
    assert re.search(r"│ clip\S* +│ clip\S* +│ 10 +│ 10 │ passed", out.output), out.output
    assert "✗" in tests["mnist.sgd_step"]["message"] and "✗" not in tests["clip.clip_by_global_norm"]["message"]
    assert (tmp_path / "junit.xml").exists()


def test_the_github_classroom_workflow_refuses_a_course_file_the_student_changed(tmp_path):
    """The student's repository holds course.toml: one student set clip's points to 0.01 and his 5 of 20 became 5 of
    10.01 (#44). The workflow's step before any grading, run as GitHub runs a step (bash -e), passes the teacher's
    course.toml (its SHA-256 pinned in GRADLAB_COURSE_SHA256, any case) and refuses a changed one, a missing one and a
    run without the variable."""
    import hashlib
    import re
    import subprocess

    from conftest import REPO

    example = REPO / "examples" / "github-classroom"
    workflow = (example / ".github" / "workflows" / "classroom.yml").read_text()
    assert "GRADLAB_COURSE_SHA256: ${{ vars.GRADLAB_COURSE_SHA256 }}" in workflow
    step = re.search(r"- name: course\.toml is the teacher's.*?\n        run: \|\n(.*?)\n      - ", workflow, re.S)
    assert step and workflow.index(step.group(0)) < workflow.index('sudo "$RUNNER_TEMP/gradlab/bin/gradlab" check')
    script = "\n".join(line[10:] for line in step.group(1).splitlines())
    course = (example / "course.toml").read_bytes()
    pinned = hashlib.sha256(course).hexdigest()

    def run(text: bytes | None, digest: str) -> subprocess.CompletedProcess:
        repo = tmp_path / f"repo-{run.n}"
        run.n += 1
        repo.mkdir()
        if text is not None:
            (repo / "course.toml").write_bytes(text)
        return subprocess.run(["bash", "-e", "-c", script], cwd=repo, capture_output=True, text=True, timeout=30,
                              env={"PATH": "/usr/bin:/bin", "GRADLAB_COURSE_SHA256": digest})
    run.n = 0

    assert run(course, pinned).returncode == 0 and run(course, pinned.upper()).returncode == 0
    changed = course.replace(b'exercise = "clip.clip_by_global_norm", points = 10',
                             b'exercise = "clip.clip_by_global_norm", points = 0.01')
    assert changed != course
    refused = run(changed, pinned)
    assert refused.returncode == 1 and "course.toml is not the teacher's" in refused.stdout, refused
    unset = run(course, "")
    assert unset.returncode == 1 and "set the Actions variable GRADLAB_COURSE_SHA256" in unset.stdout, unset
    assert run(None, pinned).returncode != 0


def test_the_examples_say_how_they_score():
    """run_autograder said "one point per check" while it scores by course.toml (#44)."""
    from conftest import REPO

    said = (REPO / "examples" / "gradescope" / "run_autograder").read_text()
    assert "one point per check" not in said and "scored as course.toml says" in said


def test_a_folder_gets_one_summary_table(tmp_path):
    from conftest import require_sandbox

    require_sandbox()
    (tmp_path / "a.py").write_text(solution("clip.clip_by_global_norm", CLIP_RIGHT))
    (tmp_path / "b.py").write_text(starter(all_exercises()["clip.clip_by_global_norm"]))
    out = invoke("check", str(tmp_path), "--exercise", "clip.clip_by_global_norm", "--json", str(tmp_path / "all.json"))
    text = " ".join(out.output.split())
    assert out.exit_code == 1 and "1 of 2 submissions pass" in text and "NotImplementedError" in text
    # the table's points are an exercise's default 10 (as --gradescope and --classroom count), not one per check
    assert re.search(r"a\.py │ clip\.clip_by_global_norm │ 10 +│ 10 │ passed", out.output), out.output
    assert re.search(r"b\.py │ clip\.clip_by_global_norm │ 0 +│ 10 │", out.output), out.output
    data = json.loads((tmp_path / "all.json").read_text())
    # one point per check: the claim, 2 rules, the inputs left unchanged, no clip_grad_norm_
    assert [d["points"] for d in data] == [{"score": 5, "max_score": 5}, {"score": 0, "max_score": 5}]
    # a course's inputs are drawn afresh (the inputs of seed 0, and so their answers, are public), said and recorded
    seed = int(re.search(r"inputs drawn with seed (\d+)", out.output).group(1))
    assert {d["seed"] for d in data} == {seed}
    again = invoke("check", str(tmp_path), "--exercise", "clip.clip_by_global_norm", "--seed", "7", "--json",
                   str(tmp_path / "seven.json"))
    assert "--seed 7 draws them again" in " ".join(again.output.split())
    assert {d["seed"] for d in json.loads((tmp_path / "seven.json").read_text())} == {7}


def test_a_students_own_check_uses_seed_0(tmp_path):
    (tmp_path / "a.py").write_text(solution("clip.clip_by_global_norm", CLIP_RIGHT))
    out = invoke("check", str(tmp_path / "a.py"), "--json", str(tmp_path / "a.json"))
    assert out.exit_code == 0 and json.loads((tmp_path / "a.json").read_text())["seed"] == 0
    assert "inputs drawn with seed" not in out.output


def test_each_harness_imports_first_in_a_fresh_process():
    """The sandbox's child imports an exercise's harness before anything else of gradlab: no import circle may hide
    behind gradlab's own import order. One Python loads torch (no gradlab), then forks a child per harness module:
    each child imports its harness as the first module of gradlab it sees, as a fresh process would (torch is
    loaded once, not once per harness: it was 14 s of the suite)."""
    import json
    import subprocess
    import sys

    from gradlab.practice import harness_module

    functions: dict[str, list[str]] = {}
    for exercise in all_exercises().values():
        functions.setdefault(harness_module(exercise), []).append(exercise.function)
    # importlib, as the child does: `import gradlab.lessons.x as h` binds through gradlab.lessons, the function
    code = f"""import json, os, sys
import torch
assert not [m for m in sys.modules if m.startswith("gradlab")]
found = {{}}
for module in {sorted(functions)!r}:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            import importlib
            h = importlib.import_module(module)
            os.write(write, json.dumps(sorted(h.HARNESSES)).encode())
        except BaseException as e:
            os.write(write, json.dumps(repr(e)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        found[module] = json.loads(f.read() or b'"nothing"')
    os.waitpid(pid, 0)
print(json.dumps(found))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout.splitlines()[-1])
    for module, names in functions.items():
        for name in names:
            assert isinstance(found[module], list) and name in found[module], (module, found[module])


def test_gradlabs_threads_never_parse_python_at_the_same_time(monkeypatch):
    """A folder is graded two files at a time; CPython 3.11's AST constructor shares its recursion depth across
    threads ("SystemError: AST constructor recursion depth mismatch" stopped a check under CI). The pre-flight and the
    sandbox's import scan, run from two threads at once, never overlap inside ast.parse."""
    import ast
    import threading
    import time

    from gradlab.practice.judging.submission import preflight

    real, inside, overlaps = ast.parse, [0], []
    lock = threading.Lock()

    def slow_parse(*args, **kwargs):
        with lock:
            inside[0] += 1
            overlaps.append(inside[0] > 1)
        time.sleep(0.02)  # long enough for the other thread to arrive
        try:
            return real(*args, **kwargs)
        finally:
            with lock:
                inside[0] -= 1

    monkeypatch.setattr(ast, "parse", slow_parse)
    exercise = all_exercises()["mnist.sgd_step"]
    source = starter(exercise).encode()
    jobs = [lambda: preflight(source, "a.py", exercise),
            lambda: sandbox_files.gradlab_imports("gradlab.lessons.mnist.exercises.harness")] * 4
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda job: job(), jobs))
    assert len(overlaps) >= 8 and not any(overlaps)


def test_an_autograd_function_whose_apply_is_replaced_by_the_library_fails(tmp_path):
    """apply = F.log_softmax would pass every value, gradient and second-derivative check with no forward or
    backward written: the harness requires the output to come from the class's own autograd node."""
    path = tmp_path / "apply.py"
    path.write_text("import torch\nimport torch.nn.functional as F\n\n\nclass LogSoftmax(torch.autograd.Function):\n"
                    "    apply = staticmethod(lambda z: F.log_softmax(z, dim=-1))\n")
    r = check_file(path, "mnist.LogSoftmax")
    assert r.exit_code == 1 and not any(c.passed for c in r.claims)
    assert "did not run LogSoftmax's own forward and backward" in json.dumps(r.to_json(), ensure_ascii=False)


def test_ctrl_c_on_a_folder_starts_no_queued_file(tmp_path, monkeypatch):
    """Ctrl-C while `gradlab check FOLDER` grades its third file: no file still queued starts, what was graded is
    written, the others are said not graded, exit 130. (Before: the stop was seen only when a running check ended,
    and by then a worker had taken the next file.) Ctrl-C is simulated in this process, the checks by a stand-in."""
    import _thread
    import threading
    import time
    from types import SimpleNamespace

    from gradlab.practice.judging import check
    from gradlab.practice.sandbox import box, modes

    started = []

    def stand_in(submission, seed):
        started.append(submission.shown)
        time.sleep(0.15)
        if submission.shown == "s2.py":
            _thread.interrupt_main()  # Ctrl-C, half way through this check
        time.sleep(0.15)
        return check.stopped_result(submission.exercise, submission.shown, "graded by a stand-in", seed)

    monkeypatch.setattr(modes, "detect", lambda: SimpleNamespace(isolated=True, mode="bwrap", why=""))
    monkeypatch.setattr(box, "_STOPPING", threading.Event())  # the stop kills this process's sandboxes: none after
    monkeypatch.setattr(check, "result_of", stand_in)
    for i in range(8):
        (tmp_path / f"s{i}.py").write_text(f"# {i}\n")
    out = invoke("check", str(tmp_path), "--exercise", "mnist.sgd_step", "--json", str(tmp_path / "all.json"))
    time.sleep(0.5)  # a file started late would show here
    assert out.exit_code == 130 and len(started) <= 4, (out.exit_code, started)
    stopped = [r["stopped"] for r in json.loads((tmp_path / "all.json").read_text())]
    assert stopped[:2] == ["graded by a stand-in"] * 2
    assert all(s.startswith("not graded: gradlab was stopped") for s in stopped[len(started):]), stopped


def test_the_sgd_step_starter_names_every_input_it_is_checked_on():
    """A student whose step fails on an input the starter never mentioned cannot know why: the tutorial's own cost,
    log(softmax(z)), is NaN at logits in the hundreds, so the starter says those inputs are there, and what to use."""
    from gradlab.lessons.mnist.exercises.harness import _sgd_cases

    said = {"batch of 100": "a batch of 100", "one sample (the batch's first)": "one sample",
            "zero init (the tutorial's)": "zero weights (the tutorial's start)", "lr = 0": "lr = 0",
            "large weights": "large weights", "large logits (float32, |z| in the hundreds)":
            "logits in the hundreds (float32)", "20 steps of training from zero (float64)":
            "20 steps of training from zero (float64)"}
    doc = " ".join(all_exercises()["mnist.sgd_step"].doc.split())
    assert [c["label"] for c in _sgd_cases(0)] == list(said)  # a new input must be named in the starter too
    assert all(phrase in doc for phrase in said.values()), [p for p in said.values() if p not in doc]
    assert "F.log_softmax" in doc and "NaN" in doc
