"""Regenerate the generated blocks of README.md and of every page of the docs site, docs/**/*.md (`make docs`).

Three kinds of block. A run block holds what a command prints (the command is the one a reader would type):

    <!-- run: gradlab log1pexp --dtype float32 -->
    ```
    ...whatever the command printed...
    ```
    <!-- /run -->

Each command runs in a fresh process at a fixed width of 110 columns, without colour, and its output replaces the
block. A doc block holds a lesson's explanation, its module docstring as Markdown (what `--explain full` prints,
without the code), after a line that says where it comes from:

    <!-- doc: log1pexp -->
    ...the docstring of gradlab/lessons/log1pexp/lesson.py...
    <!-- /doc -->

The docstring says what the reader of the code needs; the tutorial's story and the sources are the page's own
prose, around the block. A bench block holds what a bench measured, rendered from its JSON in bench/results/ (the
file `make bench` writes; bench/render.py lists the blocks it knows):

    <!-- bench: seeds dqn -->
    ...the seed sweep of dqn as bench/results/seeds.json holds it, the machine and its load included...
    <!-- /bench -->

Nothing in those blocks is typed by hand. `python scripts/readme.py --check` lists the blocks and exits 1 when a
command does not parse (unknown lesson or option) or a bench block has no JSON to render, without running anything;
`--only TEXT` re-runs only the run blocks whose command contains TEXT and keeps the others as they are; `--bench`
runs no command at all. Doc and bench blocks are always rewritten: they cost nothing (a bench block only reads its
JSON).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
BLOCK = re.compile(r"(<!-- run: (?P<cmd>.+?) -->\n)```\n(?P<out>.*?)```\n(<!-- /run -->)", re.S)
DOC = re.compile(r"(<!-- doc: (?P<lesson>[\w-]+) -->\n)(?P<out>.*?)(<!-- /doc -->)", re.S)
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


def run(cmd: str) -> str:
    env = {**os.environ, "COLUMNS": WIDTH, "NO_COLOR": "1", "TERM": "dumb"}
    proc = subprocess.run([sys.executable, "-m", "gradlab", *command_args(cmd)], capture_output=True, text=True,
                          env=env, cwd=ROOT)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"readme: `{cmd}` exited {proc.returncode}: {proc.stderr.strip()}")
    return "\n".join(line.rstrip() for line in proc.stdout.splitlines()) + "\n"


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


def rewrite(page: Path, only: str | None, runs: bool = True) -> int:
    text = page.read_text(encoding="utf-8")
    out, last, n = [], 0, 0
    for m in blocks(text):
        if not runs or (only is not None and only not in m["cmd"]):
            continue
        start = time.perf_counter()
        printed = run(m["cmd"])
        print(f"{time.perf_counter() - start:6.1f} s  {m['cmd']}", flush=True)
        out += [text[last:m.start()], m.group(1), "```\n", printed, "```\n", m.group(4)]
        last, n = m.end(), n + 1
    out.append(text[last:])
    text = "".join(out)
    text = DOC.sub(lambda m: m.group(1) + lesson_doc(m["lesson"]) + m.group(4), text)
    text = BENCH.sub(lambda m: m.group(1) + bench_text(m["spec"], page) + m.group(4), text)
    page.write_text(text, encoding="utf-8")
    return n


def main() -> None:
    if "--check" in sys.argv[1:]:
        from gradlab.cli import cli

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
    runs = "--bench" not in sys.argv[1:]
    for page in pages():
        n = rewrite(page, only, runs)
        print(f"rewrote {n} run blocks and {len(bench_blocks(page.read_text(encoding='utf-8')))} bench blocks in "
              f"{page.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
