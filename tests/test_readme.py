"""The example outputs of README.md and of every page of the docs site (docs/**/*.md) are generated (`make docs`,
scripts/readme.py); these tests fail when they drift.

Every `<!-- run: COMMAND -->` block must hold a command the CLI accepts, and the output pasted under it. The
quick commands are run again here and compared word for word, with every number masked (timings and the last
digits of float32 sums differ between machines) and table borders and line wrapping ignored: a renamed column,
a reworded claim, a new or missing row or note, or a ✓ that became ✗ fails the test. Every `<!-- doc: LESSON -->`
block must hold the lesson's docstring exactly as `make docs` pastes it.
"""

import importlib.util
import json
import re
import shlex
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO

from gradlab.cli.main import cli
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
    assert any(c.startswith("gradlab mnist --dataset mnist-sample --offline") for c in commands)
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


def printed(cmd: str, tmp_path: Path) -> str:
    """What lesson command CMD prints, as scripts/readme.py's run() takes it for the page (its arguments, environment
    and clean-up), run in this process through click's CliRunner: no Python and torch to start per block (they were a
    second or two each)."""
    result = CliRunner().invoke(cli, readme.page_args(cmd, tmp_path), prog_name="gradlab", env=readme.PAGE_ENV)
    assert result.exit_code in (0, 1), (cmd, result.exit_code, result.stderr[-2000:])
    return readme.as_page(result.stdout, tmp_path)


@pytest.mark.parametrize("block", [m for m, _ in QUICK], ids=[i for _, i in QUICK])
def test_quick_readme_outputs_match_what_the_code_prints(block, tmp_path):
    name, *args = readme.command_args(block["cmd"])
    if name in LESSONS and "--help" not in args:
        printed_now = printed(block["cmd"], tmp_path)
    else:  # a help text is wrapped at the width its Python started with (and costs no torch): run as the page's is
        printed_now = readme.run(block["cmd"])
    shown = block["out"]
    lesson = (readme.command_args(block["cmd"])[0] in LESSONS and "--help" not in block["cmd"]
              and "--quiet" not in block["cmd"])
    assert ("claims hold" in printed_now or not lesson) and words(printed_now) == words(shown), (
        f"the block of `{block['cmd']}` drifted: only on the page {words(shown) - words(printed_now)}, "
        f"only printed {words(printed_now) - words(shown)}; run `make docs`")


def test_masking_keeps_words_and_drops_numbers_and_borders():
    assert words("│ ✓ │ max |ΔW| 4.47e-08 │ ≤ 1e-06 │ 1,858 │ 0.5") == Counter(
        {"✓": 1, "max": 1, "|ΔW|": 1, "#": 4, "≤": 1})
    assert words("gradlab 0.1.0 · torch 2.14.1+cu130 · device cpu\nnote: --device auto: none\nok") == Counter(["ok"])


# The benches' figures: every `<!-- bench: SPEC -->` block holds what bench/render.py makes of bench/results/*.json.
BENCHES = [(page, m) for page, text in PAGES.items() for m in readme.bench_blocks(text)]
record_spec = importlib.util.spec_from_file_location("bench_record", REPO / "bench" / "record.py")
record = importlib.util.module_from_spec(record_spec)
record_spec.loader.exec_module(record)


@pytest.mark.parametrize("page, block", BENCHES, ids=[f"{p.relative_to(REPO)}: {m['spec']}" for p, m in BENCHES])
def test_every_bench_block_is_what_its_json_renders(page, block):
    assert block["out"] == readme.bench_text(block["spec"], page), (
        f"{page.relative_to(REPO)}: <!-- bench: {block['spec']} --> drifted from bench/results: run "
        "`python scripts/readme.py --bench`")


def test_the_measured_figures_are_on_their_pages():
    """The seed sweeps on the pages of their lessons and in Dependable in class, the speed ratios and the cost of a
    check under Measurements, the total time of `make bench` where it is explained."""
    shown = {(page.relative_to(REPO).as_posix(), m["spec"]) for page, m in BENCHES}
    for want in [("docs/lessons/dqn.md", "seeds dqn"), ("docs/lessons/actor-critic.md", "seeds actor-critic"),
                 ("docs/lessons/ddp.md", "seeds ddp"),
                 ("docs/lessons/ddp.md", "seeds ddp --workers 3 --uneven --micro-batches 3"),
                 ("docs/teach/dependable.md", "seeds"), ("docs/develop/measurements.md", "total")]:
        assert want in shown, f"{want[0]} has no <!-- bench: {want[1]} --> block"


def test_a_bench_block_without_its_json_says_what_to_run(tmp_path, monkeypatch):
    with pytest.raises(SystemExit, match=r"bench/results/seeds\.json does not exist: run `python "
                                         r"bench/bench_seeds\.py`"):
        readme.bench_text("seeds dqn", results=tmp_path)
    monkeypatch.setattr(record, "RESULTS", tmp_path)
    record.write("seeds", {"sweeps": {}})
    with pytest.raises(SystemExit, match=r"seeds\.json has no sweep 'dqn'"):
        readme.bench_text("seeds dqn", results=tmp_path)
    with pytest.raises(SystemExit, match="no such bench"):
        readme.bench_text("speed", results=tmp_path)


def sweep(rows: list[tuple[int, bool, float]]) -> dict:
    """A seeds.json sweep of dqn with ROWS (seed, passed, the learns claim's value), as bench_seeds.py writes it."""
    return {"measured": "2026-01-01 00:00 UTC", "cpu": "CPU X", "cpus": 2, "gpu": None, "torch": "2.0", "nice": 10,
            "load_average_before": [1.5, 1, 1], "load_average_after": [2.5, 1, 1], "lesson": "dqn", "extra": [],
            "seeds": [rows[0][0], rows[-1][0]], "jobs": 1, "passed": 99, "runs": 99, "wall_s": 300.0,
            "median_run_s": 20.0, "max_run_s": 30.0,
            "rows": [{"seed": s, "command": f"gradlab dqn --seed {s}", "rc": 0 if ok else 1, "passed": ok,
                      "wall_s": 20.0, "best_step": 3000, "stopped": None, "error": None,
                      "claims": [{"id": "stop-grad-learns", "value": v, "bound": 195, "op": ">=", "passed": ok},
                                 {"id": "anatomy", "value": 1e-7, "bound": 1e-6, "op": "<=", "passed": True}]}
                     for s, ok, v in rows]}


def test_a_sweep_renders_the_pass_count_its_rows_hold_and_where_it_was_measured(tmp_path):
    data = sweep([(0, True, 500.0), (1, False, 120.5), (2, True, 200.0)])
    (tmp_path / "seeds.json").write_text(json.dumps({"sweeps": {"dqn": data}}))
    text = readme.bench_text("seeds dqn", results=tmp_path)
    assert "every claim held on **2 of 3 seeds** (seeds 0–2)" in text  # counted from the rows, not "passed": 99
    assert "CPU X, 2 cores, no GPU, torch 2.0, at nice 10, load average 1.5 before, 2.5 after" in text
    assert "| 1 | 120 (≥ 195) ✗ | 3,000 | 1e-07 (≤ 1e-06, anatomy) | stop-grad-learns | 20.0 |" in text
    assert text.count("\n| ") == 2 + 3  # the header, its rule, a row per seed
    summary = readme.bench_text("seeds", results=tmp_path)
    assert "`gradlab dqn --seed S` | **2 of 3** (seeds 0–2) | 5 min, one run at a time |" in summary


def test_the_total_of_make_bench_adds_its_parts_and_names_those_never_run(tmp_path):
    (tmp_path / "seeds.json").write_text(json.dumps({"sweeps": {"dqn": sweep([(0, True, 500.0)])}}))
    text = readme.bench_text("total", results=tmp_path)
    assert "| `python bench/bench_seeds.py --lessons dqn --seeds 0-0 --jobs 1` | 5 min |" in text
    assert "In all **5 min**" in text and "Not measured yet: `bench/bench_mnist.py`" in text
    (tmp_path / "check.json").write_text(json.dumps({"command": "python bench/bench_check.py clip", "wall_s": 60.0,
                                                     "measured": "2026-01-01 00:00 UTC"}))
    text = readme.bench_text("total", results=tmp_path)  # one exercise's checks are not `make bench`'s part
    assert "In all **5 min**" in text and "not added: `python bench/bench_check.py clip` (60 s" in text
    assert "at the same time" not in text
    ddp = {**sweep([(0, True, 500.0)]), "lesson": "ddp", "measured": "2026-01-01 00:02 UTC"}  # within dqn's 5 min
    (tmp_path / "seeds.json").write_text(json.dumps({"sweeps": {"dqn": sweep([(0, True, 500.0)]), "ddp": ddp}}))
    text = readme.bench_text("total", results=tmp_path)
    assert "In all **10 min**" in text and "some of them ran at the same time" in text


def test_make_bench_runs_the_parts_the_total_adds_up():
    """bench/render.py's MAKE_BENCH is what the Makefile's `bench` target runs: each script, each sweep's key."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    target = re.search(r"^bench:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
    parts = []
    for line in target.splitlines():
        args = shlex.split(line.strip())[1:]  # after $(BIN)/python
        name = Path(args[0]).stem.removeprefix("bench_")
        if name != "seeds":
            parts.append((name, None))
            continue
        opts = dict(zip(args[1::2], args[2::2], strict=False))
        extra = opts.get("--extra", "")
        lessons = opts.get("--lessons", "dqn,actor-critic").split(",")
        parts += [("seeds", f"{lesson} {extra}".strip()) for lesson in lessons]
    assert parts == readme.bench_render.MAKE_BENCH


def test_a_bench_writes_its_json_atomically(tmp_path, monkeypatch):
    monkeypatch.setattr(record, "RESULTS", tmp_path)
    record.write("seeds", {"sweeps": {"a": 1}})
    with pytest.raises(ValueError):  # NaN is not JSON: the write fails half-way, "b" already written
        record.write("seeds", {"sweeps": {"b": 2, "a": float("nan")}})
    assert json.loads((tmp_path / "seeds.json").read_text()) == {"sweeps": {"a": 1}}
    assert [p.name for p in tmp_path.iterdir()] == ["seeds.json"]
