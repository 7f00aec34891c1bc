"""What the site's pages say, against what gradlab does: the error lines they quote, and how much prose a lesson
page holds (issue #47)."""

import importlib.util
import re
import shlex

import pytest
from conftest import REPO, invoke

from gradlab.kit.result import Curve, Result
from gradlab.lessons import LESSONS

DOCS = REPO / "docs"
_spec = importlib.util.spec_from_file_location("prose", REPO / "scripts" / "prose.py")
prose = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(prose)
LESSON_PAGES = prose.lesson_pages()
# `gradlab ARGS` prints `gradlab: error: ...` (the line wrapped in the page's source, so any whitespace between)
QUOTED_ERROR = re.compile(r"`(gradlab [^`]+)`\s+prints\s+`(gradlab: error: [^`]+)`")


def quoted_errors() -> list[tuple[str, str, str]]:
    return [(page.relative_to(DOCS).as_posix(), m[1], m[2]) for page in sorted(DOCS.rglob("*.md"))
            for m in QUOTED_ERROR.finditer(page.read_text())]


def test_the_pages_quote_some_error_lines():
    assert any(page == "reference/output.md" for page, _, _ in quoted_errors())


@pytest.mark.parametrize(("page", "command", "line"), quoted_errors())
def test_an_error_line_a_page_quotes_is_what_gradlab_prints(page, command, line):
    result = invoke(*shlex.split(command)[1:])
    assert result.exit_code == 2 and result.stderr.strip() == line, (page, result.stderr)


def test_the_api_page_documents_every_public_function_and_exception():
    """reference/api.md has a mkdocstrings block (`::: gradlab.api.NAME`) for every function gradlab/__init__.py
    names, and one for each exception of gradlab.errors; the fields blocks of Result and Claim are checked by
    tests/test_readme.py."""
    import ast
    import inspect

    import gradlab
    from gradlab import errors

    page = (DOCS / "reference" / "api.md").read_text()
    blocks = set(re.findall(r"^::: ([\w.]+)$", page, re.M))
    tree = ast.parse((REPO / "gradlab" / "__init__.py").read_text())
    public = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "gradlab.api"
              for a in n.names}
    assert public and all(callable(getattr(gradlab, name)) for name in public)
    assert {f"gradlab.api.{name}" for name in public} <= blocks
    exceptions = {n for n, c in vars(errors).items() if inspect.isclass(c) and issubclass(c, BaseException)
                  and c.__module__ == errors.__name__}
    assert {f"gradlab.errors.{name}" for name in exceptions} <= blocks
    assert {"gradlab.kit.result.Result", "gradlab.kit.result.Claim"} <= blocks
    assert {"<!-- fields: gradlab.kit.result.Result -->", "<!-- fields: gradlab.kit.result.Claim -->"} <= set(
        page.splitlines())


def test_the_prose_count_leaves_out_code_generated_blocks_and_collapsed_details():
    page = """# Title here

Two words.
```
not counted at all
```
<!-- bench: seeds dqn -->
| not | counted |
<!-- /bench -->
<details class="note" markdown>
<summary>Details</summary>

hidden words here
</details>

??? note "collapsed"
    hidden too

    and this
back again, it's x = 1.5e-6 ![alt text](a.svg)
"""
    assert prose.words(page) == len(["Title", "here", "Two", "words", "back", "again", "it's", "x", "1.5e-6"])


@pytest.mark.parametrize("page", LESSON_PAGES, ids=[p.stem for p in LESSON_PAGES])
def test_a_lesson_page_holds_at_most_1500_words_of_prose(page):
    """Issue #47: a student reads a lesson page straight through; the rest is collapsed (python scripts/prose.py)."""
    assert prose.words(page.read_text()) <= prose.MOST


@pytest.mark.parametrize("lesson", list(LESSONS))
def test_every_lesson_page_shows_its_graph_and_its_plot_when_it_has_curves(lesson):
    """Each lesson's page shows its backward graph (docs/graphs/, scripts/graphs.py) and, where its run block draws
    curves (`--plot LESSON.svg`), that plot (docs/plots/, written by `make docs`) right under the block."""
    text = (DOCS / "lessons" / f"{lesson}.md").read_text()
    assert f"](../graphs/{lesson}.svg)" in text and (DOCS / "graphs" / f"{lesson}.svg").is_file()
    if re.search(rf"<!-- run: gradlab {lesson}\b[^>]*--plot {lesson}\.svg -->", text):
        block_end = text.index("<!-- /run -->", text.index(f"--plot {lesson}.svg -->"))
        assert text[block_end + len("<!-- /run -->"):].lstrip().startswith(f"![the curves of `gradlab {lesson}")
        assert f"](../plots/{lesson}.svg)" in text
        svg = (DOCS / "plots" / f"{lesson}.svg").read_text()
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg


@pytest.mark.parametrize("lesson", list(LESSONS))
def test_a_lesson_page_opens_with_what_the_tutorial_taught(lesson):
    """Issue #47: a lesson page opens, before its first section, with the tutorial it reproduces (or says that no
    tutorial taught it)."""
    text = (DOCS / "lessons" / f"{lesson}.md").read_text()
    assert "tutorial" in text.split("\n## ", 1)[0].lower()


def test_the_backward_pass_page_shows_a_clickable_graph_after_the_command_that_draws_it():
    """The page about gradlab graph (lessons/backward-pass.md) reads as a lesson page: the command's output (a run
    block), then the graph page that command writes, embedded as the lessons embed theirs (docs/graphs/)."""
    text = (DOCS / "lessons" / "backward-pass.md").read_text()
    run = re.search(r"<!-- run: gradlab graph ([\w-]+) -->", text)
    assert run and run[1] in LESSONS
    frame = re.search(r'<iframe src="\.\./graphs/([\w-]+)\.html"', text)
    assert frame and frame[1] == run[1] and frame.start() > run.end()
    assert (DOCS / "graphs" / f"{run[1]}.html").is_file()


def test_a_plot_ending_in_svg_is_an_svg_and_the_same_on_every_run():
    from gradlab.report.files import plot_png

    result = Result(lesson="mnist", title="t", seed=0, metrics={}, claims=[],
                    curves={"cost": Curve("epoch", "cost", [1, 2, 3], {"manual": [3.0, 2.0, 1.5]})})
    svg = plot_png(result, "svg")
    assert svg.startswith(b"<?xml") and b"<svg" in svg and svg == plot_png(result, "svg")
    assert plot_png(result).startswith(b"\x89PNG")


def test_a_lesson_pages_exercises_section_names_every_exercise_of_its_lesson():
    from gradlab.api import list_exercises

    by_lesson: dict[str, set[str]] = {}
    for e in list_exercises():
        by_lesson.setdefault(e["lesson"], set()).add(e["name"])
    pages = 0
    for lesson in LESSONS:
        text = (DOCS / "lessons" / f"{lesson}.md").read_text()
        if "\n## Exercises\n" in text:
            section = text.split("\n## Exercises\n", 1)[1].split("\n## ", 1)[0]
            assert set(re.findall(r"`(" + re.escape(lesson) + r"\.\w+)`", section)) == (
                by_lesson.get(lesson, set())), lesson
            pages += 1
    assert pages >= 3
