"""Regenerate the generated blocks of README.md and of every page of the docs site, docs/**/*.md (`make docs`).

Three kinds of block. A run block holds what a command prints (the command is the one a reader would type):

    <!-- run: gradlab log1pexp --dtype float32 -->
    ```
    ...whatever the command printed...
    ```
    <!-- /run -->

Each command runs in a fresh process at a fixed width of 110 columns, without colour, and its output replaces the
block. A `--plot NAME.svg` in the command writes docs/plots/NAME.svg, the picture of the curves the page shows
under the block (`![...](../plots/NAME.svg)`). A doc block holds a lesson's explanation, its module docstring as
Markdown (what `--explain full` prints, without the code), after a line that says where it comes from:

    <!-- doc: log1pexp -->
    ...the docstring of gradlab/lessons/log1pexp/lesson.py...
    <!-- /doc -->

The docstring says what the reader of the code needs; the tutorial's story and the sources are the page's own
prose, around the block. A bench block holds what a bench measured, rendered from its JSON in bench/results/ (the
file `make bench` writes; bench/render.py lists the blocks it knows):

    <!-- bench: seeds dqn -->
    ...the seed sweep of dqn as bench/results/seeds.json holds it, the machine and its load included...
    <!-- /bench -->

A fields block holds a dataclass's fields (a teacher's own exercise is written with them) as a table read from its
source: name, type, default, and the comment that declares what the field means:

    <!-- fields: gradlab.kit.exercise.Exercise -->
    | field | type | default | meaning |
    ...
    <!-- /fields -->

The same docstring opens each lesson's notebook (notebooks/NN-<lesson>.ipynb): the cell whose metadata has
"gradlab-prose": "title" gets the lesson's command and the docstring's title line, the one marked "math" the rest
of its learner part (before its `---` line), the text `gradlab LESSON --explain` prints. Only those cells are
rewritten (tests/test_notebooks.py checks that they are what this script writes); the rest of a notebook is its own.

Nothing in those blocks is typed by hand. `python scripts/readme.py --check` lists the blocks and exits 1 when a
command does not parse (unknown lesson or option) or a bench block has no JSON to render, without running anything;
`--only TEXT` re-runs only the run blocks whose command contains TEXT and keeps the others as they are; `--prose` and
`--bench` run no command at all. Doc, fields and bench blocks and the notebooks' prose cells are always rewritten:
they cost nothing (a bench block only reads its JSON).
"""

from __future__ import annotations

import ast
import importlib.util
import io
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PLOTS = DOCS / "plots"  # the SVGs of a lesson's curves its page shows: `--plot NAME.svg` in a run block writes them
NOTEBOOKS = ROOT / "notebooks"
BLOCK = re.compile(r"(<!-- run: (?P<cmd>.+?) -->\n)```\n(?P<out>.*?)```\n(<!-- /run -->)", re.S)
DOC = re.compile(r"(<!-- doc: (?P<lesson>[\w-]+) -->\n)(?P<out>.*?)(<!-- /doc -->)", re.S)
FIELDS = re.compile(r"(<!-- fields: (?P<cls>[\w.]+) -->\n)(?P<out>.*?)(<!-- /fields -->)", re.S)
BENCH = re.compile(r"(<!-- bench: (?P<spec>[^>]+?) -->\n)(?P<out>.*?)(<!-- /bench -->)", re.S)
WIDTH = "110"
_spec = importlib.util.spec_from_file_location("bench_render", ROOT / "bench" / "render.py")
bench_render = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_render)


def pages() -> list[Path]:
    """README.md and every page of the site, in a fixed order."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def blocks(text: str) -> list[re.Match]:
    return list(BLOCK.finditer(text))


def doc_blocks(text: str) -> list[re.Match]:
    return list(DOC.finditer(text))


def field_blocks(text: str) -> list[re.Match]:
    return list(FIELDS.finditer(text))


def fields_table(path: str) -> str:
    """The fields of the dataclass PATH (module.Class) as a Markdown table, read from its source without importing
    it: name, type, default ("required" when none) and meaning (the comment on the field's line, else the comment
    lines right above it). A field without one stops `make docs`: what a field means is said where it is declared."""
    module, _, name = path.rpartition(".")
    source = Path(importlib.util.find_spec(module).origin).read_text(encoding="utf-8")
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == name)
    comments = {tok.start[0]: (tok.string.lstrip("#").strip(), tok.line.lstrip().startswith("#"))
                for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT}
    rows = ["| field | type | default | meaning |", "| --- | --- | --- | --- |"]
    for node in cls.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        meaning = [comments[n][0] for n in range(node.lineno, node.end_lineno + 1) if n in comments]
        above, n = [], node.lineno - 1
        while not meaning and n in comments and comments[n][1]:
            above.insert(0, comments[n][0])
            n -= 1
        meaning = " ".join(meaning or above)
        if not meaning:
            raise SystemExit(f"readme: {path}.{node.target.id} has no comment saying what it means")
        rows.append(f"| `{node.target.id}` | `{ast.get_source_segment(source, node.annotation)}` | "
                    f"{_default(source, node.value)} | {meaning.replace('|', chr(92) + '|')} |")
    return "\n".join(rows) + "\n"


def _default(source: str, value: ast.expr | None) -> str:
    if value is None:
        return "required"
    if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field":
        for k in value.keywords:
            if k.arg == "default_factory":
                return {"dict": "`{}`", "list": "`[]`"}.get(getattr(k.value, "id", ""), f"`{k.value.id}()`")
            if k.arg == "default":
                value = k.value
    return f"`{ast.get_source_segment(source, value)}`"


def bench_blocks(text: str) -> list[re.Match]:
    return list(BENCH.finditer(text))


def bench_text(spec: str, page: Path | None = None, results: Path = bench_render.RESULTS) -> str:
    """What a `<!-- bench: SPEC -->` block holds: the Markdown bench/render.py makes of the bench's JSON, between
    blank lines; one line saying what to run when the JSON is missing."""
    try:
        return f"\n{bench_render.render(spec, results).rstrip()}\n\n"
    except (bench_render.Missing, ValueError) as e:
        where = f"{page.relative_to(ROOT)}: " if page else ""
        raise SystemExit(f"readme: {where}<!-- bench: {spec} -->: {e}") from None


def all_blocks() -> list[tuple[Path, re.Match]]:
    """(page, run block) for every run block of every page."""
    return [(page, m) for page in pages() for m in blocks(page.read_text(encoding="utf-8"))]


def command_args(cmd: str) -> list[str]:
    args = shlex.split(cmd)
    if args[0] != "gradlab":
        raise SystemExit(f"readme: a run block must start with 'gradlab', got {cmd!r}")
    return args[1:]


PAGE_ENV = {"COLUMNS": WIDTH, "NO_COLOR": "1", "TERM": "dumb"}  # what a block is printed under


def page_args(cmd: str, folder: Path) -> list[str]:
    """CMD's arguments, a `--plot NAME.svg` in it (a bare file name: what a reader types) written into FOLDER."""
    args = command_args(cmd)
    return [str(folder / a) if i and args[i - 1] == "--plot" and "/" not in a and a != "-" else a
            for i, a in enumerate(args)]


def as_page(printed: str, folder: Path) -> str:
    """What a run that wrote into FOLDER printed, as the page shows it: `wrote clip.svg`, as the reader's run says it,
    and no trailing blanks."""
    printed = printed.replace(f"{folder}{os.sep}", "")
    return "\n".join(line.rstrip() for line in printed.splitlines()) + "\n"


def run(cmd: str, plots: Path | None = None) -> str:
    """What CMD prints. A `--plot NAME.svg` in it writes into PLOTS (`make docs`: docs/plots/, where the page's image
    points), else into a folder thrown away after the run (the tests)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = plots or Path(tmp)
        proc = subprocess.run([sys.executable, "-m", "gradlab", *page_args(cmd, folder)], capture_output=True,
                              text=True, env={**os.environ, **PAGE_ENV}, cwd=ROOT)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"readme: `{cmd}` exited {proc.returncode}: {proc.stderr.strip()}")
    return as_page(proc.stdout, folder)


def lesson_doc(lesson: str) -> str:
    """The lesson's explanation as Markdown: where it comes from, then its module docstring, the text
    `--explain full` prints."""
    from gradlab.lessons import LESSONS
    from gradlab.report.explain import docstring_markdown

    info = LESSONS[lesson]
    where = (f"The lesson's own explanation, its module docstring (`{info.package.replace('.', '/')}/lesson.py`), "
             f"pasted here by `make docs`. `gradlab {lesson} --explain` prints its first part, the idea and the math, "
             f"with the lines of code that compute them; `gradlab {lesson} --explain full` prints all of it, with the "
             "code of every function it names.")
    return f"{where}\n\n{docstring_markdown(info.load()).rstrip()}\n"


HOW_TO_RUN = ("Run the cells in order. Every number below is measured when you run it; every claim is checked at "
              "run time. `gradlab {lesson} --explain` prints the explanation below with the lines of code that "
              "compute it.")


def notebook_prose(lesson: str) -> dict[str, str]:
    """The text of the notebook's generated cells, by their "gradlab-prose" marker: the lesson's docstring's learner
    part, as `--explain` prints it (Markdown whose formulas are code blocks: Unicode, no LaTeX, so it reads the same
    in Jupyter, on the site and in the terminal)."""
    from gradlab.lessons import LESSONS
    from gradlab.report.explain import learner_markdown

    title, body = learner_markdown(LESSONS[lesson].load())
    return {"title": f"# `gradlab {lesson}`\n\n**{title}**\n\n{HOW_TO_RUN.format(lesson=lesson)}",
            "math": f"## The idea and the math\n\n{body.rstrip()}"}


def notebooks() -> list[tuple[str, Path]]:
    """(lesson, notebook) for every notebook in notebooks/: NN-<lesson>.ipynb."""
    return [(path.stem.split("-", 1)[1], path) for path in sorted(NOTEBOOKS.glob("*.ipynb"))]


def notebook_cells(lesson: str, nb) -> dict[str, object]:
    """NB's generated cells by their marker; exits naming what is missing when a marker is not there once."""
    marked = [c for c in nb.cells if "gradlab-prose" in c.metadata]
    cells = {c.metadata["gradlab-prose"]: c for c in marked}
    if sorted(cells) != sorted(notebook_prose(lesson)) or len(marked) != len(cells):
        found = sorted(c.metadata["gradlab-prose"] for c in marked)
        raise SystemExit(f'readme: the {lesson} notebook must have one markdown cell marked "gradlab-prose": "title" '
                         f'and one marked "math" (in the cell\'s metadata); it has {found}')
    return cells


def rewrite_notebook(lesson: str, path: Path) -> bool:
    """Write the lesson's docstring into its notebook's generated cells; True when something changed."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    changed = False
    for part, text in notebook_prose(lesson).items():
        cell = notebook_cells(lesson, nb)[part]
        changed |= cell.source != text
        cell.source = text
    if changed:
        nbformat.validate(nb)
        nbformat.write(nb, path)
    return changed


PROSE = object()  # --prose: no run block re-run


def rewrite(page: Path, only: str | object | None, runs: bool = True) -> int:
    text = page.read_text(encoding="utf-8")
    out, last, n = [], 0, 0
    for m in blocks(text):
        if not runs or (only is not None and (only == PROSE or only not in m["cmd"])):
            continue
        start = time.perf_counter()
        printed = run(m["cmd"], PLOTS)
        print(f"{time.perf_counter() - start:6.1f} s  {m['cmd']}", flush=True)
        out += [text[last:m.start()], m.group(1), "```\n", printed, "```\n", m.group(4)]
        last, n = m.end(), n + 1
    out.append(text[last:])
    text = "".join(out)
    text = DOC.sub(lambda m: m.group(1) + lesson_doc(m["lesson"]) + m.group(4), text)
    text = FIELDS.sub(lambda m: m.group(1) + fields_table(m["cls"]) + m.group(4), text)
    text = BENCH.sub(lambda m: m.group(1) + bench_text(m["spec"], page) + m.group(4), text)
    page.write_text(text, encoding="utf-8")
    return n


OPTIONS = ("--check", "--only", "--prose", "--bench")


def main() -> None:
    argv = sys.argv[1:]
    unknown = [a for i, a in enumerate(argv) if a not in OPTIONS and not (i and argv[i - 1] == "--only")]
    if unknown or argv[-1:] == ["--only"]:
        print(f"readme: {'--only needs a TEXT' if not unknown else 'unknown argument ' + unknown[0]}; use "
              f"--check, --only TEXT, --prose or --bench (scripts/readme.py's docstring says what each does)",
              file=sys.stderr)
        raise SystemExit(2)
    if "--check" in sys.argv[1:]:
        from gradlab.cli.main import cli

        for page, m in all_blocks():
            name, *args = command_args(m["cmd"])
            if name != "--help" and "--help" not in args:
                cli.commands[name].make_context(name, args)  # raises on an unknown lesson, option or value
            print(f"ok: {page.relative_to(ROOT)}: {m['cmd']}")
        for page in pages():
            for m in bench_blocks(page.read_text(encoding="utf-8")):
                bench_text(m["spec"], page)  # exits with what to run when its JSON is missing
                print(f"ok: {page.relative_to(ROOT)}: bench {m['spec']}")
        return
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv[1:-1] else None
    if "--prose" in sys.argv[1:]:
        only = PROSE
    runs = "--bench" not in sys.argv[1:]
    for page in pages():
        n = rewrite(page, only, runs)
        print(f"rewrote {n} run blocks and {len(bench_blocks(page.read_text(encoding='utf-8')))} bench blocks in "
              f"{page.relative_to(ROOT)}")
    for lesson, path in notebooks():
        print(f"{'rewrote' if rewrite_notebook(lesson, path) else 'kept'} the prose cells of {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
