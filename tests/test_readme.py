"""The example outputs of README.md and of every page of the docs site (docs/**/*.md) are generated (`make docs`,
scripts/readme.py); these tests fail when they drift.

Every `<!-- run: COMMAND -->` block must hold a command the CLI accepts, and the output pasted under it. The
quick commands are run again here and compared word for word, with every number masked (timings and the last
digits of float32 sums differ between machines) and table borders and line wrapping ignored: a renamed column,
a reworded claim, a new or missing row or note, or a ✓ that became ✗ fails the test. Every `<!-- doc: LESSON -->`
block must hold the lesson's docstring exactly as `make docs` pastes it.
"""

import importlib.util
import re
from collections import Counter

import pytest
from conftest import REPO

from gradlab.cli import cli
from gradlab.lessons import LESSONS, measured_runtimes

spec = importlib.util.spec_from_file_location("readme", REPO / "scripts" / "readme.py")
readme = importlib.util.module_from_spec(spec)
spec.loader.exec_module(readme)

PAGES = {page: page.read_text(encoding="utf-8") for page in readme.pages()}
BLOCKS = [m for text in PAGES.values() for m in readme.blocks(text)]
IDS = [f"{page.relative_to(REPO)}: {m['cmd']}" for page, text in PAGES.items() for m in readme.blocks(text)]
DOCS = [(page, m) for page, text in PAGES.items() for m in readme.doc_blocks(text)]
NUMBER = re.compile(r"[-+]?(\d[\d,]*\.?\d*(e[-+]?\d+)?|\.\d+|nan|inf)(?![\w])", re.I)
BORDERS = re.compile(r"[─━│┃┏┓┗┛┡┩┠┨┯┷┿╇╈┳┻╋┣┫└┘┌┐├┤┬┴┼╭╮╰╯═║╔╗╚╝…]")


# Lines that differ by machine, not by code: the versions header, and which device `auto` found.
MACHINE = re.compile(r"^(gradlab \S+ · torch .*|note: --device auto: .*)$", re.M)


def words(text: str) -> Counter:
    """The multiset of words of TEXT with numbers masked, table borders and machine-specific lines dropped."""
    return Counter(NUMBER.sub("#", BORDERS.sub(" ", MACHINE.sub("", text))).split())


def test_the_pages_have_generated_blocks_for_every_lesson():
    commands = [m["cmd"] for m in BLOCKS]
    assert all(any(c.startswith(f"gradlab {name}") for c in commands) for name in LESSONS), commands
    assert "gradlab mnist --dataset mnist-sample --offline" in commands
    assert all(m["out"].strip() for m in BLOCKS), "an empty block: run `make docs`"


def test_every_lesson_page_holds_its_docstring_as_make_docs_pastes_it():
    """One source: a lesson's page shows its module docstring (what `--explain` prints the first part of)."""
    assert sorted(m["lesson"] for _, m in DOCS) == sorted(LESSONS)
    for page, m in DOCS:
        assert m["out"] == readme.lesson_doc(m["lesson"]), f"{page.relative_to(REPO)} drifted: run `make docs`"


def test_the_own_exercise_reference_holds_every_field_as_the_dataclasses_declare_it():
    """One source: the fields a teacher's own exercise is written with (name, type, default, meaning) are the
    dataclasses' own, pasted by `make docs`; a field whose declaration says nothing of what it means stops it."""
    fields = [(page, m) for page, text in PAGES.items() for m in readme.field_blocks(text)]
    page = REPO / "docs" / "reference" / "own-exercise.md"
    assert {m["cls"].rpartition(".")[2] for p, m in fields if p == page} >= {"Exercise", "Harness", "Checks", "Mistake"}
    for where, m in fields:
        assert m["out"] == readme.fields_table(m["cls"]), f"{where.relative_to(REPO)} drifted: run `make docs`"
    import dataclasses

    from gradlab.kit.exercise import Checks, Exercise, Mistake
    from gradlab.kit.harness import Harness

    for cls in (Exercise, Harness, Checks, Mistake):  # every field has its row
        table = readme.fields_table(f"{cls.__module__}.{cls.__name__}")
        assert [f.name for f in dataclasses.fields(cls)] == re.findall(r"^\| `(\w+)` \|", table, re.M)


def test_a_field_without_a_meaning_stops_make_docs(tmp_path, monkeypatch):
    (tmp_path / "undocumented.py").write_text("from dataclasses import dataclass\n\n\n@dataclass\nclass A:\n"
                                              "    said: int = 1  # what it is\n    unsaid: str = ''\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SystemExit, match=r"undocumented\.A\.unsaid has no comment"):
        readme.fields_table("undocumented.A")


def test_the_edge_case_the_own_exercise_reference_shows_is_the_examples():
    """The page's code is the worked example's, line for line (the example is what the tests run)."""
    page = (REPO / "docs" / "reference" / "own-exercise.md").read_text(encoding="utf-8")
    shown = re.search(r"```python\n(.*?)```", page, re.S)[1]
    assert shown in (REPO / "examples" / "own-exercise" / "linreg" / "harness.py").read_text(encoding="utf-8")


@pytest.mark.parametrize("block", BLOCKS, ids=IDS)
def test_every_readme_command_parses(block):
    name, *args = readme.command_args(block["cmd"])
    if name == "--help":
        return
    assert name in cli.commands, block["cmd"]
    if "--help" not in args:  # --help is answered by click before anything is checked
        cli.commands[name].make_context(name, args)  # raises on an unknown option or a bad value


def quick(block) -> bool:
    """A lesson that runs in under 10 s, a --help, or `gradlab list`: run again by the test."""
    name, *args = readme.command_args(block["cmd"])
    return (name in ("--help", "list") or "--help" in args
            or measured_runtimes()["lessons"].get(name, {}).get("default_s", 99) < 10)


QUICK = [(m, i) for m, i in zip(BLOCKS, IDS, strict=True) if quick(m)]


@pytest.mark.parametrize("block", [m for m, _ in QUICK], ids=[i for _, i in QUICK])
def test_quick_readme_outputs_match_what_the_code_prints(block):
    printed = readme.run(block["cmd"])
    shown = block["out"]
    lesson = (readme.command_args(block["cmd"])[0] in LESSONS and "--help" not in block["cmd"]
              and "--quiet" not in block["cmd"])
    assert ("claims hold" in printed or not lesson) and words(printed) == words(shown), (
        f"the block of `{block['cmd']}` drifted: only on the page {words(shown) - words(printed)}, "
        f"only printed {words(printed) - words(shown)}; run `make docs`")


def test_masking_keeps_words_and_drops_numbers_and_borders():
    assert words("│ ✓ │ max |ΔW| 4.47e-08 │ ≤ 1e-06 │ 1,858 │ 0.5") == Counter(
        {"✓": 1, "max": 1, "|ΔW|": 1, "#": 4, "≤": 1})
    assert words("gradlab 0.1.0 · torch 2.14.1+cu130 · device cpu\nnote: --device auto: none\nok") == Counter(["ok"])
