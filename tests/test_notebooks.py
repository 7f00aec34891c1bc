"""The Python API (gradlab.run, gradlab.list_lessons) and the notebooks in notebooks/, run on a real Jupyter kernel."""

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

import gradlab
from gradlab.errors import GradlabError
from gradlab.lessons import LESSONS

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def script(name: str):
    """scripts/NAME.py, imported as a module."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_import_gradlab_does_not_import_torch():
    code = "import sys, gradlab; gradlab.list_lessons(); gradlab.options('mnist'); print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_lessons_lists_every_lesson_in_teaching_order():
    assert [lesson["name"] for lesson in gradlab.list_lessons()] == list(LESSONS)
    from gradlab.practice import all_exercises

    assert [e["name"] for e in gradlab.list_exercises()] == list(all_exercises())


def test_run_returns_the_result_the_cli_renders_and_shows_itself_in_jupyter(sample):
    r = gradlab.run("mnist", epochs=2, dataset="mnist-sample", offline=True, variant="manual", train_size=2000)
    assert r.lesson == "mnist" and r.exit_code == 0 and r.metrics["manual"]["epoch_cost"]
    assert r.curves["epoch cost"].series["manual"] == r.metrics["manual"]["epoch_cost"]  # curves as plain data
    page = r._repr_html_()
    assert page.startswith('<div class="gradlab"><style>') and "claims checked at run time" in page
    assert "body {" not in page and ".gradlab table" in page  # the report's style, confined to this output
    assert "data:image/png;base64," in page and "<table" in page
    assert "```" not in page and "<pre><code>" in page  # the math is Markdown rendered to HTML, not raw text


def test_a_check_alone_shows_itself_in_jupyter(tmp_path):
    """gradlab.check, in a fresh process where no lesson ran: Jupyter draws its Result (the report layer registers
    the renderer; gradlab.kit.result imports nothing from it)."""
    from gradlab.practice import all_exercises, answer_source

    source = answer_source(all_exercises()["clip.clip_by_global_norm"])
    (tmp_path / "answer.py").write_text("import torch\n" + source, encoding="utf-8")
    code = ("import gradlab, answer\n"
            "r = gradlab.check(answer.clip_by_global_norm, 'clip.clip_by_global_norm')\n"
            "print(r.exit_code, r._repr_html_()[:28])\n"
            "print(r.threads, r.device, bool(r.torch), r.metrics['points'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    shown, ran = out.stdout.strip().splitlines()
    assert shown == '0 <div class="gradlab"><style>', out.stderr
    assert ran.startswith("1 cpu True {'score': "), ran  # its header says what it ran on, as gradlab check's does


@pytest.mark.parametrize("kwargs, message", [
    ({"epochs": 1.5}, "epochs must be a whole number, got 1.5; e.g. epochs=10"),
    ({"epoch": 3}, "unknown option epoch=3; did you mean epochs=?"),
    ({"lr": float("nan")}, "gradlab.run('mnist'): lr must be a positive finite number, got nan (at most 3.4e+38 "
                           "here); e.g. lr=0.01"),  # the lesson's own check, in Python's terms
    ({"variant": "fast"}, "unknown variant 'fast'"),
    ({"device": "tpu"}, "bad value for device"),
    ({"json_path": "r.json"}, "unknown option json_path"),
])
def test_bad_keyword_arguments_raise_the_one_line_errors(kwargs, message):
    with pytest.raises(GradlabError, match=None) as e:
        gradlab.run("mnist", **kwargs)
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("lesson, kwargs, message", [
    ("mnist", {"epochs": 0}, "gradlab.run('mnist'): epochs must be at least 1, got 0; e.g. epochs=10"),
    ("ddp", {"workers": 5, "batch_size": 4}, "gradlab.run('ddp'): workers=5 is more than the 4 samples of the global "
                                             "batch: a worker would have nothing to do; use fewer workers or a larger "
                                             "batch_size"),
    ("ddp", {"uneven": True, "micro_batches": 1}, "gradlab.run('ddp'): uneven=True needs micro_batches=2 or more"),
    ("ddp", {"port": 70000}, "gradlab.run('ddp'): port must be between 0 and 65535"),
    ("gaussian-policy", {"sigma": "0,1"}, "e.g. sigma='0.7,1.2'"),
    ("mnist", {"threads": 0}, "gradlab.run('mnist'): threads must be between 1 and"),
])
def test_the_lessons_checks_speak_in_keywords_to_python(lesson, kwargs, message):
    """A Config's checks say `--lr` on the command line (tests/test_cli.py) and `lr=` here; the flag never shows."""
    with pytest.raises(GradlabError) as e:
        gradlab.run(lesson, **kwargs)
    assert message in str(e.value) and "--" not in str(e.value)


def test_unknown_lesson():
    with pytest.raises(GradlabError, match="unknown lesson 'mnst'"):
        gradlab.run("mnst")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebooks_are_stored_without_outputs_and_run_on_colab(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c["outputs"] and c["execution_count"] is None for c in code), "clear the outputs before committing"
    sources = ["".join(c["source"]) for c in code]
    assert 'find_spec("gradlab") is None' in sources[0] and "pip" in sources[0]  # Colab installs it first
    # the parameters cell (papermill's tag): a student's switch, which scripts/notebooks.py --quick sets after it
    assert code[1]["metadata"].get("tags") == ["parameters"] and "\nQUICK = False" in sources[1]
    assert any("gradlab.run(" in s for s in sources) and sum("## Now break it" in "".join(c["source"])
                                                             for c in nb["cells"]) == 1
    # ends with "Your turn": every exercise of its lesson, a starter cell and its gradlab.check
    lesson = path.stem.split("-", 1)[1]
    from gradlab.practice import all_exercises

    exercises = [c["metadata"]["gradlab-exercise"] for c in code if "gradlab-exercise" in c["metadata"]]
    assert exercises == [e.name for e in all_exercises().values() if e.lesson == lesson]
    assert all(f'gradlab.check({all_exercises()[n].function}, "{n}")' in "".join(sources) for n in exercises)
    # each check keeps its Result under its own name: re-running a lesson cell afterwards still finds the lesson's r
    assert all(f'check_{all_exercises()[n].function} = gradlab.check(' in "".join(sources) for n in exercises)
    assert not any(s.lstrip().startswith("r = gradlab.check") for s in sources)


def test_one_notebook_per_lesson_in_teaching_order():
    missing = [n for n in LESSONS if n not in [p.stem.split("-", 1)[1] for p in NOTEBOOKS]]
    assert not missing, (f"no notebook for {', '.join(missing)}: each lesson has notebooks/NN-<lesson>.ipynb, NN its "
                         f"place in the teaching order (copy one of a lesson like it)")
    assert [p.stem.split("-", 1)[1] for p in NOTEBOOKS] == list(LESSONS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_a_notebook_shows_students_no_test_wiring_and_no_answer_before_they_run(path):
    """No cell reads the suite's environment or speaks of the test suite, and no code cell asserts: the claims and
    what each "What happened" says are asserted by scripts/notebooks.py, in cells it inserts (issue #34)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    text = ["".join(c["source"]) for c in cells]
    assert not [t for t in text if "GRADLAB_NOTEBOOK" in t or "test suite" in t or "os.environ" in t]
    asserting = [t for c, t in zip(cells, text, strict=True)
                 if c["cell_type"] == "code" and re.search(r"^\s*assert\b", t, re.M)]
    assert not asserting, asserting
    # every "What happened" follows the run it tells about, and that run's cell is checked (scripts/notebooks.py)
    for i, t in enumerate(text):
        if t.startswith("<details><summary><b>What happened</b>"):
            assert cells[i - 1]["cell_type"] == "code" and "gradlab-check" in cells[i - 1]["metadata"], t[:80]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_a_notebooks_explanation_is_its_lessons_docstring(path):
    """The title and math cells are what scripts/readme.py (`make docs`) writes from the lesson's docstring, the
    text `--explain` prints and the lesson's page includes (issue #36): one source."""
    import nbformat

    readme = script("readme")
    lesson = path.stem.split("-", 1)[1]
    cells = readme.notebook_cells(lesson, nbformat.read(path, as_version=4))
    for part, text in readme.notebook_prose(lesson).items():
        assert cells[part].cell_type == "markdown"
        assert cells[part].source == text, f"{path.name}'s {part} cell is stale: run `python scripts/readme.py --prose`"
    assert "$" not in "".join(readme.notebook_prose(lesson).values())  # no LaTeX: the terminal and the site show it too


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_a_notebooks_your_turn_is_what_your_turn_py_writes(path):
    import nbformat

    lesson = path.stem.split("-", 1)[1]
    cells = nbformat.read(path, as_version=4).cells
    start = next(i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("## Your turn"))
    written = script("your_turn").your_turn(lesson)
    assert [(c.cell_type, c.source, dict(c.metadata)) for c in cells[start:]] == \
        [(c.cell_type, c.source, dict(c.metadata)) for c in written], f"run `python scripts/your_turn.py` ({path.name})"


def test_the_notebook_runner_inserts_a_check_after_every_marked_cell():
    """What the suite proves, cell by cell: the lesson's claims after its run, each break-it outcome after its run,
    each model answer after its check; QUICK = True after the parameters cell. A check without its cell (or a cell
    without its check) is refused, so none is lost silently."""
    import nbformat

    runner = script("notebooks")
    from gradlab.practice import all_exercises

    for path in NOTEBOOKS:
        lesson = path.stem.split("-", 1)[1]
        plain = nbformat.read(path, as_version=4)
        nb = runner.prepare(nbformat.read(path, as_version=4), lesson, quick=True, answers=True)
        inserted = [(nb.cells[i - 1], c.source) for i, c in enumerate(nb.cells)
                    if runner.INJECTED in c.metadata.get("tags", [])]
        marked = [c for c in plain.cells if "gradlab-check" in c.metadata]
        exercises = [c.metadata["gradlab-exercise"] for c in plain.cells if "gradlab-exercise" in c.metadata]
        assert len(inserted) == len(marked) + len(exercises) + 1, path.name
        assert "run" in [c.metadata["gradlab-check"] for c in marked], f"{path.name}: its main run's claims unchecked"
        quick = [s.splitlines()[-1] for before, s in inserted if "parameters" in before.metadata.get("tags", [])]
        assert quick == ["QUICK = True"], path.name
        answered = [before.source.split(" = ")[0] for before, s in inserted if "exit_code == 0, check_" in s]
        assert answered == [f"check_{all_exercises()[n].function}" for n in exercises], path.name
    plain = nbformat.read(NOTEBOOKS[0], as_version=4)
    plain.cells = [c for c in plain.cells if c.metadata.get("gradlab-check") != "lr-50"]
    with pytest.raises(ValueError, match="lr-50"):
        runner.prepare(plain, "mnist", quick=False, answers=False)


@pytest.mark.parametrize("broken", ["answer", "outcome"])
def test_the_notebook_runner_fails_on_a_wrong_answer_or_a_false_outcome(broken, monkeypatch):
    """The inserted assertions do fail: a wrong model answer, or a "What happened" the run contradicts, stops the
    notebook with the cell's error (scripts/notebooks.py exits 1 on it)."""
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    import gradlab.practice

    runner = script("notebooks")
    cells = [nbformat.v4.new_code_cell("import gradlab\n\nQUICK = False")]
    cells[0].metadata["tags"] = ["parameters"]
    if broken == "answer":  # the model answer of clip.global_norm, with the square root forgotten
        wrong = gradlab.practice.answer_source(gradlab.practice.all_exercises()["clip.global_norm"])
        wrong = wrong.replace("math.sqrt(", "(").replace("torch.sqrt(", "(").replace(".sqrt()", "")
        assert wrong != gradlab.practice.answer_source(gradlab.practice.all_exercises()["clip.global_norm"])
        monkeypatch.setattr(gradlab.practice, "answer_source", lambda exercise: f"import torch\n\n{wrong}")
        monkeypatch.setattr(runner, "CHECKS", {})  # this notebook has no marked run
        starter = nbformat.v4.new_code_cell("def global_norm(grads): ...")
        starter.metadata["gradlab-exercise"] = "clip.global_norm"
        check = 'check_global_norm = gradlab.check(global_norm, "clip.global_norm")\ncheck_global_norm'
        cells += [starter, nbformat.v4.new_code_cell(check)]
    else:  # the real CHECKS of ddp's "A cap nobody reaches", after a run whose cap bites
        monkeypatch.setattr(runner, "CHECKS", {"ddp": {"loose-clip": runner.CHECKS["ddp"]["loose-clip"]}})
        run = nbformat.v4.new_code_cell(
            "class Claim:\n    text, value, passed = 'clip, then all-reduce ≠ all-reduce, then clip', 0.3, True\n\n"
            "claim = Claim()")
        run.metadata["gradlab-check"] = "loose-clip"
        cells.append(run)
    nb = runner.prepare(nbformat.v4.new_notebook(cells=cells), "ddp" if broken == "outcome" else "clip",
                        quick=True, answers=True)
    with pytest.raises(CellExecutionError, match="AssertionError"), runner.kernel_manager() as km:
        NotebookClient(nb, km=km, timeout=120, kernel_name="python3", shutdown_kernel=runner.SHUTDOWN).execute()


@pytest.mark.skipif(os.name != "posix", reason="Unix sockets")
def test_a_notebooks_kernel_talks_over_unix_sockets_in_a_folder_removed_after():
    """scripts/notebooks.py's kernels use jupyter_client's ipc transport: no TCP port to find free and bind later
    (which any connection on the machine can take in between)."""
    pytest.importorskip("jupyter_client")
    with script("notebooks").kernel_manager() as km:
        folder = Path(km.ip).parent
        assert km.transport == "ipc" and folder.is_dir() and Path(km.connection_file).parent == folder
    assert not folder.exists()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_notebook_runs_end_to_end_on_a_jupyter_kernel(path):
    """Each on its own kernel (pytest-xdist runs them beside the other tests), quick budgets, the model answers in;
    a failed claim, a false "What happened" or a failing answer is a failed assert in a cell scripts/notebooks.py
    inserts."""
    if not os.environ.get("GRADLAB_REQUIRE_JUPYTER"):
        pytest.importorskip("nbclient")
        pytest.importorskip("ipykernel")

    # scripts/notebooks.py's own execute(), in this process (no second Python to start): a failing cell raises
    # nbclient's CellExecutionError, which names the notebook's cell and its error
    executed = script("notebooks").execute(path, quick=True, answers=True)
    outputs = [o for c in executed["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    assert not [o for o in outputs if o["output_type"] == "error"]
    inserted = ["".join(c["source"]) for c in executed["cells"] if "gradlab-injected" in c["metadata"].get("tags", [])]
    assert any(s.endswith("QUICK = True") for s in inserted) and any("assert r.exit_code == 0" in s for s in inserted)
    assert any("text/html" in o.get("data", {}) for o in outputs), "the Result displayed itself"
    # the student's own plot, drawn after a Result was shown, appears (showing a Result changes no backend)
    own = next(i for i, c in enumerate(executed["cells"]) if "## Your own plot" in "".join(c["source"]))
    cell = executed["cells"][own + 1]
    if "plt.show()" in "".join(cell["source"]):  # jacobian's default run has no curves: it lists them instead
        assert any("image/png" in o.get("data", {}) for o in cell["outputs"]), path.name
