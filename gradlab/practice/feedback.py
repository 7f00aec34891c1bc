"""What `gradlab grade` writes from its records (gradlab.practice.gradebook.record): the gradebook (grades.csv), each
student's feedback (Markdown and HTML: what `gradlab check` would have shown them) and the class page (class.html).
Pages are self-contained: inline CSS, no script, nothing fetched. Everything a student chose (their code's output,
their folder's name) is escaped."""

from __future__ import annotations

import csv
import io
import re
import statistics
import unicodedata
from dataclasses import dataclass, field
from html import escape

from gradlab.kit.result import NOT_REACHED, mark
from gradlab.practice.course import Item
from gradlab.practice.lms import canvas_id

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;
vertical-align:top}th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}
.pass{background:#d8f5d8}.part{background:#fbeec2}.zero{background:#f8d3d3}.none{background:#e6e6e6;color:#666}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto;white-space:pre-wrap}
.bar{display:inline-block;height:.8em;background:#4a7fc1;vertical-align:middle}
.ok{color:#18794e}.bad{color:#c62828}.muted{color:#666}a{color:#1a5fb4}
"""


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")


def cell_class(rec: dict | None) -> str:
    """The colour of a score: all points, some, none, or not handed in."""
    if rec is None or "is missing from this submission" in (rec["stopped"] or ""):
        return "none"
    return "pass" if rec["score"] >= rec["points"] else "part" if rec["score"] > 0 else "zero"


def anchor(file: str) -> str:
    return "ex-" + re.sub(r"[^A-Za-z0-9_-]", "-", file)


def fmt(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


# -------------------------------------------------------------------- the gradebook
def grades_csv(items: list[Item], table: dict[str, dict[str, dict]]) -> str:
    """A row per student, a column per exercise (its score) and the total: TABLE is {student: {file: record}}."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["student", *(f"{i.exercise} ({fmt(i.points)})" for i in items),
                     f"total ({fmt(sum(i.points for i in items))})"])
    for student, recs in table.items():
        scores = [recs[i.file]["score"] for i in items]
        writer.writerow([_csv_safe(student), *map(fmt, scores), fmt(sum(scores))])
    return out.getvalue()


def canvas_csv(items: list[Item], table: dict[str, dict[str, dict]]) -> str:
    """The same scores in the layout Canvas's gradebook import reads (instructure/canvas-lms,
    lib/gradebook_importer.rb): a header that starts `Student`, `ID`, `SIS Login ID`, `Section`
    (row_has_student_headers?, update_column_count), then one column per exercise, each a new assignment titled
    `gradlab EXERCISE` (no `(number)` at its end: Canvas reads `Title (123)` as the assignment whose id is 123); a
    `Points Possible` row (process_pp); a row per student with the ID left empty, so that Canvas finds the student by
    SIS Login ID, then by name (process_student): the student's folder name in both; the ID is the Canvas user id
    when the student's files came from a Canvas download (lms.canvas_id), which Canvas matches first. No total: Canvas
    adds the assignments up itself."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["Student", "ID", "SIS Login ID", "Section", *(f"gradlab {i.exercise}" for i in items)])
    writer.writerow(["Points Possible", "", "", "", *(fmt(i.points) for i in items)])
    for student, recs in table.items():
        writer.writerow([_csv_safe(student), canvas_id(recs), _csv_safe(student), "",
                         *(fmt(recs[i.file]["score"]) for i in items)])
    return out.getvalue()


def _csv_safe(text: str) -> str:
    """A spreadsheet runs a cell that starts with = + - @ as a formula, after spaces too, and reads the fullwidth ＝
    as =: a student name whose first other character (NFKC-normalized) is one of them, or that starts with a space,
    tab or line break, is quoted with '."""
    norm = unicodedata.normalize("NFKC", text)
    first = next((ch for ch in norm if not (ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Zs"))), "")
    quoted = "'" + text if first in ("=", "+", "-", "@") or text[:1] in (" ", "\t", "\r", "\n") else text
    return quoted.replace("\r", "\\r").replace("\n", "\\n")  # one row a student (csv quotes no lone \r here)


# -------------------------------------------------------------------- a student's feedback
# what Markdown (GFM) could read as syntax in a student's text (< > & are HTML-escaped): link and image brackets,
# emphasis, code, a table's |, strikethrough, an e-mail's @, an _ that is not inside a word, a bare https:// or www.
MARKDOWN = re.compile(r"[\\`*\[\]|~@]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|(?<=[A-Za-z]):(?=//)|(?<=[wW]{3})\.")
LINE_START = re.compile(r"(?m)^([ \t]*)([-+=#]|\d+(?=[.)]))")  # a heading, a list, a setext underline
NUMBERED = re.compile(r"(?m)^([ \t]*\d+)([.)])")


def _mark(claim: dict) -> str:
    return mark(claim["passed"], claim.get("kind", "number"))  # a record made before claims kept their kind: ✓ or ✗


def _unreached(claim: dict) -> str:
    return " (not reached: the submission stopped before this check)" if claim.get("kind") == NOT_REACHED else ""


def _md(text: str) -> str:
    """Text a student chose (a name, an exception's message, a folder's name) for Markdown, read as it is: every
    character Markdown could take for syntax there (a [link](…), an ![image](…), *emphasis*, `code`, a heading or a
    list at a line's start, a table's |, a bare https:// or www. link) backslash-escaped, no HTML a viewer would run,
    and words (sgd_step.py, 0.125) left as they are."""
    text = MARKDOWN.sub(lambda m: "\\" + m.group(0), text)
    text = NUMBERED.sub(r"\1\\\2", LINE_START.sub(lambda m: m.group(1) + ("\\" + m.group(2) if not
                                                                          m.group(2).isdigit() else m.group(2)), text))
    return escape(text, quote=False)


def _code(text: str) -> str:
    """Text a student chose inside a `code span` (where nothing but a ` is syntax, and no escape is read)."""
    return text.replace("`", "ˋ").replace("\n", " ")


def _cell(text: str) -> str:
    """_md(TEXT) inside a Markdown table's cell (its | is escaped)."""
    return _md(text)


def feedback_md(student: str, items: list[Item], recs: dict[str, dict]) -> str:
    """STUDENT's feedback in Markdown: per exercise, the score, the claims, the diagnosis and the output."""
    total = sum(recs[i.file]["score"] for i in items)
    lines = [f"# Feedback for {_md(student)}", "", f"Total: **{fmt(total)} of {fmt(sum(i.points for i in items))}** "
             "points.", ""]
    for item in items:
        rec = recs[item.file]
        lines += [f"## {item.exercise} ({item.file}): {fmt(rec['score'])} of {fmt(rec['points'])}", "",
                  f"Scored by {item.scoring}: {rec['how']}." + (f" Graded file: `{_code(rec['found'])}`."
                                                                  if rec["found"] else ""), ""]
        if rec["stopped"]:
            lines += [f"**Stopped:** {_md(rec['stopped'])}", ""]
        if rec["diagnosis"]:
            lines += [f"**Diagnosis:** {_md(rec['diagnosis'])}", ""]
        lines += [f"- {_mark(c)} {'(rule) ' if c['rule'] else ''}{c['text']}{_unreached(c)}" for c in
                  rec["claims"]] + [""]
        lines += [f"Note: {_md(n)}" for n in rec["notes"]] + ([""] if rec["notes"] else [])
        if rec["inputs"]:
            lines += ["| input | checks | max relative \\|Δ\\| | |", "| --- | --- | ---: | --- |"]
            lines += [f"| {_cell(r[0])} | {_cell(r[1])} | {_num(r[2])} | {r[3]} |" for r in rec["inputs"]] + [""]
        for title, text in (("Your code printed", rec["printed"]), ("Your traceback", rec["trace"])):
            if text:
                lines += [f"{title}:", "", "```", text.replace("```", "ˋˋˋ"), "```", ""]
    return "\n".join(lines)


def feedback_html(student: str, items: list[Item], recs: dict[str, dict]) -> str:
    """STUDENT's feedback as a page: the Markdown's content, with the per-input table."""
    total = sum(recs[i.file]["score"] for i in items)
    parts = [f"<h1>Feedback for {escape(student)}</h1>",
             f"<p>Total: <b>{fmt(total)} of {fmt(sum(i.points for i in items))}</b> points.</p>"]
    for item in items:
        parts.append(_exercise_html(item, recs[item.file]))
    return _page(f"gradlab feedback: {student}", "\n".join(parts))


def _exercise_html(item: Item, rec: dict) -> str:
    found = f" Graded file: <code>{escape(rec['found'])}</code>." if rec["found"] else ""
    out = [f'<section id="{anchor(item.file)}" class="exercise">',
           f'<h2>{escape(item.exercise)} ({escape(item.file)}): <span class="{cell_class(rec)}">'
           f'{fmt(rec["score"])} of {fmt(rec["points"])}</span></h2>',
           f"<p>Scored by {escape(item.scoring)}: {escape(rec['how'])}.{found}</p>"]
    if rec["stopped"]:
        out.append(f'<p class="stopped"><b>Stopped:</b> {escape(rec["stopped"])}</p>')
    if rec["diagnosis"]:
        out.append(f'<p class="diagnosis"><b>Diagnosis:</b> {escape(rec["diagnosis"])}</p>')
    out.append("<ul class=\"claims\">" + "".join(
        f'<li class="{"ok" if c["passed"] else "bad"}">{_mark(c)} '
        f'{"<i>(rule)</i> " if c["rule"] else ""}{escape(c["text"] + _unreached(c))}</li>' for c in rec["claims"])
        + "</ul>")
    out += [f"<p class=\"note\">Note: {escape(n)}</p>" for n in rec["notes"]]
    if rec["inputs"]:
        rows = "".join(f"<tr><td>{escape(r[0])}</td><td>{escape(r[1])}</td><td class=\"n\">{_num(r[2])}</td>"
                       f"<td>{escape(r[3])}</td></tr>" for r in rec["inputs"])
        out.append("<table><tr><th>input</th><th>checks</th><th>max relative |Δ|</th><th></th></tr>"
                   f"{rows}</table>")
    for title, text in (("Your code printed", rec["printed"]), ("Your traceback", rec["trace"])):
        if text:
            out.append(f"<p>{title}:</p><pre>{escape(text)}</pre>")
    return "\n".join(out) + "\n</section>"


def _num(v) -> str:
    return escape(f"{v:.3g}" if isinstance(v, int | float) else str(v))


# -------------------------------------------------------------------- the class
NUMBER = re.compile(r"-?\d+\.\d+(?:e[+-]?\d+)?|-?\d+e[+-]?\d+|\b\d{3,}\b")
# a quoted input ('a batch of 64'): a quote that opens and closes between words, so that an apostrophe (the
# student's, don't, the students') is not taken for one; inside, an apostrophe between two letters is text
QUOTED = re.compile(r"(?<!\w)'(?:[^'\n]|(?<=\w)'(?=\w))*'(?!\w)")


def mistake_of(rec: dict) -> str | None:
    """What a record's student got wrong, in words shared by every student who made that mistake: the diagnosis (or
    why it stopped) up to its first measured detail, with numbers and quoted inputs masked. None when it passed."""
    if rec["passed"]:
        return None
    text = rec["stopped"] or rec["diagnosis"] or "a check failed"
    text = text.split("; the first difference")[0]
    text = re.sub(r"line \d+", "line …", text)
    text = QUOTED.sub("'…'", NUMBER.sub("…", text))
    return text if len(text) <= 240 else text[:239] + "…"


@dataclass
class Spread:
    """One exercise across the class: its scores (handed in or not) and who made which mistake."""

    item: Item
    scores: list[float] = field(default_factory=list)
    passed: int = 0
    mistakes: dict[str, list[str]] = field(default_factory=dict)


def spreads(items: list[Item], table: dict[str, dict[str, dict]]) -> list[Spread]:
    out = [Spread(i) for i in items]
    for student, recs in table.items():
        for s in out:
            rec = recs[s.item.file]
            s.scores.append(rec["score"])
            s.passed += bool(rec["passed"])
            kind = mistake_of(rec)
            if kind:
                s.mistakes.setdefault(kind, []).append(student)
    return out


def class_html(title: str, items: list[Item], table: dict[str, dict[str, dict]], slug: dict[str, str],
               made: str) -> str:
    """The class page: per exercise its pass rate and score spread, the mistakes ranked by how many students made
    them, and a student × exercise grid linking to each feedback page."""
    stats = spreads(items, table)
    n = len(table)
    body = [f"<h1>{escape(title)}</h1>", f'<p class="muted">{escape(made)}</p>',
            f"<p>{n} student{'s' if n != 1 else ''}, {len(items)} exercise{'s' if len(items) != 1 else ''}.</p>",
            "<h2>Exercises</h2>", _exercise_table(stats, n), "<h2>What the class got wrong</h2>",
            _mistake_table(stats, slug), "<h2>Students</h2>", _grid(items, table, slug)]
    return _page(title, "\n".join(body))


def _exercise_table(stats: list[Spread], n: int) -> str:
    rows = []
    for s in stats:
        bins = [0] * 5  # the score spread: 0–20 %, …, 80–100 % of the points
        for x in s.scores:
            bins[min(4, int(5 * x / s.item.points))] += 1
        hist = "".join(f'<span class="bar" style="width:{4 + 96 * b // max(1, n)}px" title="{b}"></span> {b} '
                       for b in bins)
        scores = s.scores or [0.0]
        rows.append(f"<tr><td>{escape(s.item.exercise)}</td><td>{escape(s.item.file)}</td>"
                    f'<td class="n">{fmt(s.item.points)}</td><td class="n pass-rate">{s.passed} of {n} '
                    f"({100 * s.passed / max(1, n):.0f} %)</td><td class=\"n\">{fmt(statistics.mean(scores))}</td>"
                    f'<td class="n">{fmt(statistics.median(scores))}</td><td class="n">{fmt(min(scores))}–'
                    f"{fmt(max(scores))}</td><td>{hist}</td></tr>")
    return ('<table class="exercises"><tr><th>exercise</th><th>file</th><th>points</th><th>pass</th><th>mean</th>'
            "<th>median</th><th>range</th><th>spread (0–20 % … 80–100 % of the points)</th></tr>"
            + "".join(rows) + "</table>")


def _mistake_table(stats: list[Spread], slug: dict[str, str]) -> str:
    ranked = sorted(((len(who), s.item, kind, who) for s in stats for kind, who in s.mistakes.items()),
                    key=lambda r: (-r[0], r[1].file, r[2]))
    if not ranked:
        return "<p>Every student passed every exercise.</p>"
    rows = "".join(
        f'<tr><td class="n">{count}</td><td>{escape(item.exercise)}</td><td>{escape(kind)}</td><td>'
        + ", ".join(f'<a href="feedback/{slug[w]}.html#{anchor(item.file)}">{escape(w)}</a>' for w in who)
        + "</td></tr>" for count, item, kind, who in ranked)
    return ('<table class="mistakes"><tr><th>students</th><th>exercise</th><th>diagnosis</th><th>who</th></tr>'
            + rows + "</table>")


def _grid(items: list[Item], table: dict[str, dict[str, dict]], slug: dict[str, str]) -> str:
    head = "".join(f"<th>{escape(i.file)}</th>" for i in items)
    rows = []
    for student, recs in table.items():
        cells = "".join(f'<td class="n {cell_class(recs[i.file])}"><a href="feedback/{slug[student]}.html#'
                        f'{anchor(i.file)}">{fmt(recs[i.file]["score"])}</a></td>' for i in items)
        total = sum(recs[i.file]["score"] for i in items)
        rows.append(f'<tr><td><a href="feedback/{slug[student]}.html">{escape(student)}</a></td>{cells}'
                    f'<td class="n">{fmt(total)}</td></tr>')
    return (f'<table class="grid"><tr><th>student</th>{head}<th>total ({fmt(sum(i.points for i in items))})</th>'
            "</tr>" + "".join(rows) + "</table>")
