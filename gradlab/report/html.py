"""One self-contained HTML page for a set of lesson results: tables, claims with ✓/✗, the explanation with its
source lines, and the plots embedded as PNG data. No external files, scripts or fonts: it opens offline."""

from __future__ import annotations

import base64
import dataclasses
import html
import re
from typing import Any

from markdown_it import MarkdownIt  # rich's own Markdown parser: the page shows what the terminal shows

from gradlab.kit.result import Column, Result, Table
from gradlab.lessons import LESSONS
from gradlab.report.console import _claim_from_dict, cell_text, claim_cells, student_output, threads_text
from gradlab.report.explain import Snippet, _as_markdown, explanation
from gradlab.report.files import plot_png

STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 2px solid #ddd; padding-bottom: 0.2em; margin-top: 2.5em; }
table { border-collapse: collapse; margin: 0.8em 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
td.num { text-align: right; font-family: monospace; white-space: nowrap; }
caption { text-align: left; font-weight: 600; padding: 0.3em 0; }
.pass { color: #137333; font-weight: 700; } .fail { color: #c5221f; font-weight: 700; } .bad { color: #c5221f; }
.note { color: #795500; } .meta { color: #555; } pre { background: #f6f8fa; padding: 0.8em; overflow-x: auto; }
img { max-width: 100%; border: 1px solid #eee; } details { margin: 0.8em 0; } summary { cursor: pointer; }
code { font-size: 0.92em; } .math pre code { font-size: 1em; }
"""

# After load, count the images that failed to decode: the browser test reads this attribute.
SCRIPT = """
window.addEventListener('load', function () {
  var imgs = Array.from(document.images);
  var broken = imgs.filter(function (i) { return !i.complete || i.naturalWidth === 0; }).length;
  document.body.setAttribute('data-images', imgs.length);
  document.body.setAttribute('data-broken-images', broken);
});
"""


CELL_CLASS = {"num": ' class="num"', "bad": ' class="num bad"', "text": ""}


def _cell(value: Any, spec: str | None) -> str:
    text, kind = cell_text(value, spec)
    return f"<td{CELL_CLASS[kind]}>{html.escape(text)}</td>"


def table_html(t: Table) -> str:
    head = "".join(f"<th>{html.escape(c.header)}</th>" for c in t.columns)
    rows = "".join("<tr>" + "".join(_cell(v, c.format) for v, c in zip(row, t.columns, strict=True)) + "</tr>"
                   for row in t.rows)
    note = f'<p class="note">{html.escape(t.note)}</p>' if t.note else ""
    return f'<table class="result"><caption>{html.escape(t.title)}</caption><tr>{head}</tr>{rows}</table>{note}'


def claims_html(claims: list[dict[str, Any]]) -> str:
    rows = []
    for c in claims:
        claim = _claim_from_dict(c)
        mark = f'<span class="{"pass" if claim.passed else "fail"}">{claim.mark}</span>'
        value, bound = claim_cells(claim)
        rows.append(f"<tr><td>{mark}</td><td>{html.escape(c['text'])}</td><td class='num'>{html.escape(value)}</td>"
                    f"<td class='num'>{html.escape(bound)}</td></tr>")
    return ('<table class="claims"><caption>claims checked at run time</caption>'
            "<tr><th></th><th>claim</th><th>measured</th><th>bound</th></tr>" + "".join(rows) + "</table>")


def explanation_html(doc: str, snippets: list[Snippet]) -> str:
    title, _, body = doc.partition("\n")
    # "commonmark" allows raw HTML; a docstring's < and > (x < 0) are text, so raw HTML is off
    markdown = MarkdownIt("commonmark", {"html": False})
    parts = [f"<p><b>{html.escape(title)}</b></p>", f'<div class="math">{markdown.render(_as_markdown(body))}</div>']
    for s in snippets:
        numbered = "\n".join(f"{s.start + i:4d}  {line}" for i, line in enumerate(s.code.rstrip().splitlines()))
        parts.append(f"<p><code>{html.escape(s.name)}</code> — {html.escape(s.path)}:{s.start}</p>"
                     f"<pre>{html.escape(numbered)}</pre>")
    return "<details><summary>the math and the code (read from the source at run time)</summary>" + \
        "".join(parts) + "</details>"


def lesson_html(result: dict[str, Any], doc: str, snippets: list[Snippet], png: bytes | None, wall_s: float,
                graph: str = "") -> str:
    """A lesson's section; GRAPH: its backward graph's drawing (an inline SVG), under a fold, or ""."""
    r = result
    passed = sum(c["passed"] for c in r["claims"])
    parts = [f'<section class="lesson" id="{html.escape(r["lesson"])}">',
             f'<h2>gradlab {html.escape(r["lesson"])}: {html.escape(r["title"])}</h2>',
             f'<p class="meta">torch {html.escape(r["torch"])} · device {html.escape(r["device"])} · '
             f'{html.escape(threads_text(r["threads"], r.get("threads_why", "")))} · seed {r["seed"]} · '
             f'{wall_s:.1f} s · '
             f'{passed}/{len(r["claims"])} claims hold</p>']
    if r.get("data"):
        d = r["data"]
        which = f' ({html.escape(str(d["train_images"]))})' if d.get("train_images") else ""
        parts.append(f'<p class="meta">data: <b>{html.escape(d["name"])}</b> — train {d["train"]:,}{which}, test '
                     f'{d["test"]:,} ({html.escape(str(d.get("source", "")))})</p>')
    parts += [f'<p class="note">note: {html.escape(n)}</p>' for n in r.get("notes", [])]
    if doc:
        parts.append(explanation_html(doc, snippets))
    parts += [table_html(Table.from_json(t)) for t in r["tables"]]
    parts.append(claims_html(r["claims"]))
    if isinstance(r.get("metrics", {}).get("diagnosis"), str):
        parts.append(f'<p class="note"><b>diagnosis:</b> {html.escape(r["metrics"]["diagnosis"])}</p>')
    if r.get("stopped"):
        parts.append(f'<p class="fail">stopped: {html.escape(r["stopped"])}</p>')
    shown = student_output(r.get("metrics") or {})
    if shown:  # gradlab check: what the submission printed and warned
        parts.append(f'<pre class="note">{html.escape(chr(10).join(shown))}</pre>')
    if png:
        parts.append(f'<img alt="curves of gradlab {html.escape(r["lesson"])}" '
                     f'src="data:image/png;base64,{base64.b64encode(png).decode()}">')
    if graph:
        parts.append(f'<details class="graph"><summary>the backward pass, measured (<code>gradlab '
                     f'{html.escape(r["lesson"])} --graph</code>)</summary>{graph}</details>')
    parts.append("</section>")
    return "\n".join(parts)


def page(sections: list[str], summary_rows: list[list[Any]], title: str, made: dict[str, str], ok: bool) -> str:
    """The whole page. MADE: command, gradlab and torch versions, date, and the verdict line (N claims hold, or
    which failed); OK: whether every claim held."""
    summary = table_html(Table("summary", [Column(header="lesson"), Column(header="claims passed"),
                                            Column(header="claims failed"), Column(header="wall s", format=".1f")],
                               summary_rows))
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{STYLE}</style><script>{SCRIPT}</script></head><body>"
            f"<h1>{html.escape(title)}</h1>"
            f'<p class="verdict {"pass" if ok else "fail"}">{html.escape(made["verdict"])}</p>'
            f"<p class='meta'>made on {html.escape(made['date'])} by <code>{html.escape(made['command'])}</code> · "
            f"gradlab {html.escape(made['gradlab'])} · torch {html.escape(made['torch'])}. Every number below was "
            f"measured when this page was made; every claim was checked at run time.</p>{summary}"
            + "\n".join(sections) + "</body></html>\n")


def scoped(style: str, scope: str = ".gradlab") -> str:
    """STYLE with every selector confined to SCOPE (body becomes the scope itself): in a notebook the page's style
    must not restyle the notebook around it."""
    def rule(m: re.Match) -> str:
        selectors = [sel.strip() for sel in m[1].split(",")]
        return ", ".join(scope if sel == "body" else f"{scope} {sel}" for sel in selectors) + " {" + m[2] + "}"

    return re.sub(r"([^{}]+?)\s*\{([^}]*)\}", rule, style)


def result_section(result, wall_s: float, data: dict[str, Any] | None = None, graph: str = "") -> str:
    """RESULT's section of the page: its explanation read from the lesson's source, its tables and claims, its
    plot, its backward graph (GRAPH, an SVG). DATA: result.to_json(), when the caller has it already."""
    doc, snippets = explanation(LESSONS[result.lesson].load()) if result.lesson in LESSONS else ("", [])
    return lesson_html(data or result.to_json(), doc, snippets, plot_png(result), wall_s, graph)


def result_html(result) -> str:
    """One Result, as its section of the report page, styled for Jupyter (NotebookResult._repr_html_)."""
    return f'<div class="gradlab"><style>{scoped(STYLE)}</style>{result_section(result, result.wall_s)}</div>'


class NotebookResult(Result):
    """A Result as gradlab.run and gradlab.check return it: the same fields, and Jupyter draws it as its section of
    `gradlab report`'s page (the kit's Result knows nothing of HTML)."""

    def _repr_html_(self) -> str:
        return result_html(self)


def for_notebook(result: Result) -> NotebookResult:
    """RESULT, field for field, as a NotebookResult."""
    return NotebookResult(**{f.name: getattr(result, f.name) for f in dataclasses.fields(result)})
