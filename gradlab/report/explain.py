"""--explain: the lesson's math (its module docstring) and the source lines that implement it, read from the
code at run time, so the explanation can never drift from the code.

A lesson's docstring is the one source of its explanation. The part before a line `---` is for a learner (the idea,
the math): `--explain` prints it. The whole docstring, sources and TF-1 history included, is the "How it works"
section of the lesson's page on the docs site (scripts/readme.py pastes it there, `make docs`)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path


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


RULE = "\n---\n"  # in a lesson's docstring: what follows is for the page only (sources, TF-1 history)


def learner_part(doc: str) -> str:
    """The docstring up to its `---` line: what `--explain` prints."""
    return doc.split(RULE, 1)[0].rstrip()


def docstring_markdown(module) -> str:
    """The whole docstring as Markdown, for the lesson's page (its title line is the page's section heading)."""
    doc = inspect.getdoc(module) or ""
    title, _, body = doc.partition("\n")
    return f"**{title}**\n\n{_as_markdown(body.replace(RULE, chr(10) + chr(10)))}".rstrip() + "\n"


def print_explanation(module, console) -> None:
    from rich.markdown import Markdown
    from rich.panel import Panel
    from rich.syntax import Syntax

    doc, snippets = explanation(module)
    title, _, body = learner_part(doc).partition("\n")
    more = "" if RULE not in doc else ("\n\nThe sources and the TF-1 history: the lesson's page on the docs site "
                                       "(`gradlab docs`).")
    console.print(Panel(Markdown(f"# {title}\n\n{_as_markdown(body)}{more}"), title="the math",
                        border_style="cyan"))
    shown = getattr(module, "EXPLAIN_SHORT", module.EXPLAIN[:1])  # the lines that compute the idea; the rest named
    for s in snippets:
        if s.name in shown:
            console.print(Panel(Syntax(s.code, "python", line_numbers=True, start_line=s.start, theme="ansi_dark",
                                       word_wrap=True), title=f"{s.name} — {s.path}:{s.start}", border_style="cyan"))
    rest = [f"{s.name} ({s.path}:{s.start})" for s in snippets if s.name not in shown]
    if rest:
        console.print(f"The rest of the code it explains: {', '.join(rest)}.", markup=False, highlight=False)


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
