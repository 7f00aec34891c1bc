"""--explain: the lesson's math (its module docstring) and the source lines that implement it, read from the
code at run time, so the explanation can never drift from the code.

A lesson's docstring is the one source of its explanation. The part before a line `---` is for a learner (the idea,
the math): `gradlab LESSON --explain` prints it with the code of the names in the lesson's EXPLAIN_SHORT (default
EXPLAIN[:1]), names the rest of EXPLAIN, and fits a screen (60 lines at 100 columns, tests/test_explain.py).
`--explain full` prints the whole docstring (what the reader of the code needs too) and the code of every name in
EXPLAIN. The lesson's page on the docs site shows the whole docstring as "How it works" (scripts/readme.py pastes
it there, `make docs`), beside the tutorial's story and the sources, which only the page tells; the lesson's notebook
opens with the learner part (scripts/readme.py writes it into the cells marked "gradlab-prose").

EXPLAIN never names a function whose body an exercise asks a student to write (tests/test_explain.py): what shows
that idea is the formula in the docstring and the lines that call it."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.markdown import CodeBlock, Markdown
from rich.panel import Panel
from rich.syntax import Syntax

from gradlab.lessons import LESSONS

MODES = ("short", "full")  # --explain's values: `--explain` alone is short


@dataclass
class Snippet:
    name: str
    path: str  # relative to the folder that holds the gradlab package, e.g. gradlab/lessons/mnist/lesson.py
    start: int  # first line number
    code: str


def explanation(module) -> tuple[str, list[Snippet]]:
    """(the module docstring, the source of each name in module.EXPLAIN with its line numbers)."""
    root = Path(__file__).resolve().parents[2]  # the folder that holds gradlab/ (this is gradlab/report/…)
    snippets = []
    for name in module.EXPLAIN:  # every lesson names them (gradlab.lessons.Lesson)
        obj = getattr(module, name)
        lines, start = inspect.getsourcelines(obj)
        path = Path(inspect.getsourcefile(obj)).resolve()
        snippets.append(Snippet(name, str(path.relative_to(root)) if path.is_relative_to(root) else str(path), start,
                                "".join(lines)))
    return inspect.getdoc(module) or "", snippets


RULE = "\n---\n"  # in a lesson's docstring: what follows is for the reader of the code (--explain full, the page)


def learner_part(doc: str) -> str:
    """The docstring up to its `---` line: what `--explain` prints."""
    return doc.split(RULE, 1)[0].rstrip()


def short_names(module) -> tuple[str, ...]:
    """The names whose code `--explain` prints: the lines that compute the idea (the rest are named)."""
    return getattr(module, "EXPLAIN_SHORT", module.EXPLAIN[:1])


def learner_markdown(module) -> tuple[str, str]:
    """(the docstring's title line, the rest of its learner part as Markdown): what `--explain` prints, for the
    lesson's notebook (scripts/readme.py writes it into the notebook's title and math cells, `make docs`)."""
    title, _, body = learner_part(inspect.getdoc(module) or "").partition("\n")
    return title, _as_markdown(body.strip("\n")).rstrip() + "\n"


def docstring_markdown(module) -> str:
    """The whole docstring as Markdown, for the lesson's page (its title line is the page's section heading)."""
    doc = inspect.getdoc(module) or ""
    title, _, body = doc.partition("\n")
    return f"**{title}**\n\n{_as_markdown(body.replace(RULE, chr(10) + chr(10)))}".rstrip() + "\n"


def print_explanation(lesson: str, console, *, full: bool = False) -> None:
    """LESSON's explanation on CONSOLE: the learner part of its docstring and the code of its EXPLAIN_SHORT, the
    rest named, and in the last line how to see it all; with FULL, the whole docstring and the code of EXPLAIN."""
    module = LESSONS[lesson].load()
    doc, snippets = explanation(module)
    title, _, body = (doc.replace(RULE, "\n\n") if full else learner_part(doc)).partition("\n")
    console.print(Panel(_Explanation(f"# {title}\n\n{_as_markdown(body)}"), title="the math", border_style="cyan"))
    shown = [s for s in snippets if full or s.name in short_names(module)]
    for s in shown:
        console.print(Panel(Syntax(s.code.rstrip(), "python", line_numbers=True, start_line=s.start,
                                   theme="ansi_dark", word_wrap=True),
                            title=f"{s.name} — {s.path}:{s.start}", border_style="cyan"))
    rest = [s.name for s in snippets if s not in shown]
    page = "the sources and the measured runs: the lesson's page (`gradlab docs`)"
    if full:
        console.print(f"Not shown: the functions the exercises ask you to write (`gradlab exercises`); {page}.",
                      markup=False, highlight=False)
    elif rest or RULE in doc:
        what = "the whole docstring" + (f" and the code of {', '.join(rest)}" if rest else "")
        console.print(f"All of it: `gradlab {lesson} --explain full` ({what}); {page}.", markup=False,
                      highlight=False)


class _Formula(CodeBlock):
    """A docstring's indented block (a formula, lines of code set side by side) as written, without the blank line
    rich pads a code block with above and below: the explanation keeps to a screen."""

    def __rich_console__(self, console, options):
        yield Syntax(str(self.text).rstrip(), self.lexer_name, theme=self.theme, word_wrap=True, padding=(0, 1))


class _Explanation(Markdown):
    elements: ClassVar = {**Markdown.elements, "fence": _Formula, "code_block": _Formula}


def _as_markdown(body: str) -> str:
    """Docstring text to Markdown: indented blocks that follow a blank line (the formulas) become code blocks;
    indented continuation lines of a bullet stay prose."""
    out: list[str] = []
    block: list[str] = []
    previous = ""
    for line in body.splitlines():
        if (line.startswith("    ") and (block or not previous.strip())) or (block and not line.strip()):
            block.append(line)
        else:
            if block:
                out.append("```\n" + "\n".join(b[4:] for b in block).rstrip() + "\n```\n")
                block = []
            out.append(line)
        previous = line
    if block:
        out.append("```\n" + "\n".join(b[4:] for b in block).rstrip() + "\n```")
    return "\n".join(out)
