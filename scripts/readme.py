"""Regenerate the generated blocks of README.md and of every page of the docs site, docs/**/*.md (`make docs`).

Two kinds of block. A run block holds what a command prints (the command is the one a reader would type):

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
prose, around the block.

A fields block holds a dataclass's fields (a teacher's own exercise is written with them) as a table read from its
source: name, type, default, and the comment that declares what the field means:

    <!-- fields: gradlab.kit.exercise.Exercise -->
    | field | type | default | meaning |
    ...
    <!-- /fields -->

Nothing in those blocks is typed by hand. `python scripts/readme.py --check` lists the blocks and exits 1 when a
command does not parse (unknown lesson or option), without running anything; `--only TEXT` re-runs only the run
blocks whose command contains TEXT and keeps the others as they are (doc blocks are always rewritten: they cost
nothing).
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
import time
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
BLOCK = re.compile(r"(<!-- run: (?P<cmd>.+?) -->\n)```\n(?P<out>.*?)```\n(<!-- /run -->)", re.S)
DOC = re.compile(r"(<!-- doc: (?P<lesson>[\w-]+) -->\n)(?P<out>.*?)(<!-- /doc -->)", re.S)
FIELDS = re.compile(r"(<!-- fields: (?P<cls>[\w.]+) -->\n)(?P<out>.*?)(<!-- /fields -->)", re.S)
WIDTH = "110"


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


def rewrite(page: Path, only: str | None) -> int:
    text = page.read_text(encoding="utf-8")
    out, last, n = [], 0, 0
    for m in blocks(text):
        if only is not None and only not in m["cmd"]:
            continue
        start = time.perf_counter()
        printed = run(m["cmd"])
        print(f"{time.perf_counter() - start:6.1f} s  {m['cmd']}", flush=True)
        out += [text[last:m.start()], m.group(1), "```\n", printed, "```\n", m.group(4)]
        last, n = m.end(), n + 1
    out.append(text[last:])
    text = "".join(out)
    text = DOC.sub(lambda m: m.group(1) + lesson_doc(m["lesson"]) + m.group(4), text)
    text = FIELDS.sub(lambda m: m.group(1) + fields_table(m["cls"]) + m.group(4), text)
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
        return
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv[1:-1] else None
    for page in pages():
        n = rewrite(page, only)
        print(f"rewrote {n} run blocks in {page.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
