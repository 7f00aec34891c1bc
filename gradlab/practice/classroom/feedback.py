"""What `gradlab grade` writes from its records (gradlab.practice.classroom.gradebook.record): the gradebook
(grades.csv), each
student's feedback (Markdown and HTML: what `gradlab check` would have shown them) and the class page (class.html).
Pages are self-contained: inline CSS, no script, nothing fetched. Everything a student chose (their code's output,
their folder's name) is escaped."""

from __future__ import annotations

import ast
import csv
import io
import re
import statistics
import unicodedata
from dataclasses import dataclass, field
from html import escape

from gradlab.kit.exercise import DIFFERENCE
from gradlab.kit.result import NOT_REACHED, mark
from gradlab.practice import all_exercises
from gradlab.practice.classroom import similar
from gradlab.practice.classroom.course import Item
from gradlab.practice.classroom.lms import canvas_id
from gradlab.practice.classroom.starter import starter

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
    """A row per student, a column per exercise (its score) and the total: TABLE is {student: {file: record}}. When a
    score was adjusted (late, or the teacher's override: gradlab.practice.classroom.adjust), a last column `adjusted`
    says how."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    noted = any(adjusted(r) for recs in table.values() for r in recs.values())
    writer.writerow(["student", *(f"{i.exercise} ({fmt(i.points)})" for i in items),
                     f"total ({fmt(sum(i.points for i in items))})", *(["adjusted"] if noted else [])])
    for student, recs in table.items():
        scores = [recs[i.file]["score"] for i in items]
        writer.writerow([_csv_safe(student), *map(fmt, scores), fmt(sum(scores)),
                         *([_csv_safe(adjustments(items, recs))] if noted else [])])
    return out.getvalue()


def adjusted(rec: dict) -> list[str]:
    """What changed a record's score after its check (late, the teacher's override), a line each."""
    return list(rec.get("adjusted") or [])


def adjustments(items: list[Item], recs: dict[str, dict]) -> str:
    """A student's adjustments on one line: `exercise: what; …`."""
    return "; ".join(f"{i.exercise}: {line}" for i in items for line in adjusted(recs[i.file]))


def canvas_csv(items: list[Item], table: dict[str, dict[str, dict]]) -> str:
    """The same scores in the layout Canvas's gradebook import reads (instructure/canvas-lms,
    lib/gradebook_importer.rb): a header that starts `Student`, `ID`, `SIS Login ID`, `Section`
    (row_has_student_headers?, update_column_count), then one column per exercise, each a new assignment titled
    `gradlab EXERCISE` (no `(number)` at its end: Canvas reads `Title (123)` as the assignment whose id is 123); a
    `Points Possible` row (process_pp); a row per student with the ID left empty, so that Canvas finds the student by
    SIS Login ID, then by name (process_student): the student's folder name in both; the ID is the Canvas user id
    when the student's files came from a Canvas download (lms.canvas_id), which Canvas matches first. No total: Canvas
    adds the assignments up itself. The Section column, which the importer drops unread
    (drop_student_information_columns), says what was adjusted (late, the teacher's override)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["Student", "ID", "SIS Login ID", "Section", *(f"gradlab {i.exercise}" for i in items)])
    writer.writerow(["Points Possible", "", "", "", *(fmt(i.points) for i in items)])
    for student, recs in table.items():
        writer.writerow([_canvas_name(student), canvas_id(recs), _canvas_name(student),
                         _canvas_name(adjustments(items, recs)),
                         *(fmt(recs[i.file]["score"]) for i in items)])
    return out.getvalue()


SEPARATOR = re.compile(r"([,;\t|])")  # what a spreadsheet may split a line on (its locale's list separator: ; in
# German or French, , in English), whether or not it honours the quotes csv puts around a cell holding one
POINTS_POSSIBLE = re.compile(r"(?i)points(\s+)possible")


def _csv_safe(text: str) -> str:
    """A student's name as a spreadsheet cell that runs nothing, however the sheet is split (OWASP's CSV injection
    advice): a spreadsheet runs a cell that starts with = + - @ as a formula, after spaces too, and reads the fullwidth
    ＝ as =. A name whose first other character (NFKC-normalized) is one of them, or that starts with a space, tab or
    line break, is quoted with '; so is every part of it after a , ; tab or | (a sheet that splits `x;=1+1` on ; gets
    a cell `=1+1`). One line: a line break is shown as \\n."""
    parts = SEPARATOR.split(text)  # text, separator, text, ...
    for k in range(0, len(parts), 2):
        if _formula(parts[k]) or (k == 0 and text[:1] in (" ", "\t", "\r", "\n")):
            parts[k] = "'" + parts[k]
    return "".join(parts).replace("\r", "\\r").replace("\n", "\\n")  # one row a student (csv quotes no lone \r)


def _formula(cell: str) -> bool:
    """Whether a spreadsheet would read CELL as a formula: its first character that is not a space, an invisible one
    or a quote mark (NFKC-normalized: ＝ is =) is = + - or @."""
    norm = unicodedata.normalize("NFKC", cell)
    first = next((ch for ch in norm if not (ch.isspace() or ch == '"' or unicodedata.category(ch) in ("Cc", "Cf",
                                                                                                   "Zs"))), "")
    return first in ("=", "+", "-", "@")


def _canvas_name(text: str) -> str:
    """_csv_safe(TEXT) for canvas.csv, where Canvas's importer takes any row whose first cell holds `Points Possible`
    for the points row (check_for_non_student_row): a name holding those words has them joined by _ (zed
    Points_Possible), so that its row stays a student's (one Canvas then finds by no name: the teacher matches it)."""
    return POINTS_POSSIBLE.sub(lambda m: m.group(0).replace(m.group(1), "_"), _csv_safe(text))


# -------------------------------------------------------------------- a student's feedback
# what Markdown (GFM) could read as syntax in a student's text (< > & are HTML-escaped): link and image brackets,
# emphasis, code, a table's |, strikethrough, an e-mail's @, an _ that is not inside a word, a bare https:// or www.
MARKDOWN = re.compile(r"[\\`*\[\]|~@<>&]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|(?<=[A-Za-z]):(?=//)|(?<=[wW]{3})\.")
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
    and words (sgd_step.py, 0.125) left as they are. < > & are backslash-escaped too (no HTML; the file reads
    `\\<`, not `&lt;`)."""
    text = MARKDOWN.sub(lambda m: "\\" + m.group(0), text)
    return NUMBERED.sub(r"\1\\\2", LINE_START.sub(lambda m: m.group(1) + ("\\" + m.group(2) if not
                                                                          m.group(2).isdigit() else m.group(2)), text))


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
        if adjusted(rec):
            lines += [f"**Adjusted** (the check gave {fmt(rec['graded'])}): {_md('; '.join(adjusted(rec)))}", ""]
        if rec["stopped"]:
            lines += [f"**Stopped:** {_md(rec['stopped'])}", ""]
        if rec["diagnosis"]:
            lines += [f"**Diagnosis:** {_md(rec['diagnosis'])}", ""]
        if shown := your_lines(item, rec):
            lines += [f"Your code, {shown.where}:", "", "```", *(x.replace("```", "ˋˋˋ") for x in shown.lines), "```",
                      ""]
        lines += [f"- {_mark(c)} {'(rule) ' if c['rule'] else ''}{c['text']}{_unreached(c)}" for c in
                  rec["claims"]] + [""]
        lines += [f"Note: {_md(n)}" for n in rec["notes"]] + ([""] if rec["notes"] else [])
        if rec["inputs"]:
            lines += [f"| input | checks | {_cell(DIFFERENCE)} | |", "| --- | --- | ---: | --- |"]  # its | escaped too
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
    if adjusted(rec):
        out.append(f'<p class="adjusted"><b>Adjusted</b> (the check gave {fmt(rec["graded"])}): '
                   f'{escape("; ".join(adjusted(rec)))}</p>')
    if rec["stopped"]:
        out.append(f'<p class="stopped"><b>Stopped:</b> {escape(rec["stopped"])}</p>')
    if rec["diagnosis"]:
        out.append(f'<p class="diagnosis"><b>Diagnosis:</b> {escape(rec["diagnosis"])}</p>')
    if shown := your_lines(item, rec):
        out.append(f'<p>Your code, {escape(shown.where)}:</p><pre class="yours">{escape(chr(10).join(shown.lines))}'
                   "</pre>")
    out.append("<ul class=\"claims\">" + "".join(
        f'<li class="{"ok" if c["passed"] else "bad"}">{_mark(c)} '
        f'{"<i>(rule)</i> " if c["rule"] else ""}{escape(c["text"] + _unreached(c))}</li>' for c in rec["claims"])
        + "</ul>")
    out += [f"<p class=\"note\">Note: {escape(n)}</p>" for n in rec["notes"]]
    if rec["inputs"]:
        rows = "".join(f"<tr><td>{escape(r[0])}</td><td>{escape(r[1])}</td><td class=\"n\">{_num(r[2])}</td>"
                       f"<td>{escape(r[3])}</td></tr>" for r in rec["inputs"])
        out.append(f"<table><tr><th>input</th><th>checks</th><th>{DIFFERENCE}</th><th></th></tr>"
                   f"{rows}</table>")
    for title, text in (("Your code printed", rec["printed"]), ("Your traceback", rec["trace"])):
        if text:
            out.append(f"<p>{title}:</p><pre>{escape(text)}</pre>")
    return "\n".join(out) + "\n</section>"


@dataclass(frozen=True)
class Lines:
    """The lines of a student's file that a feedback shows: WHERE (in words), LINES (numbered, → on those named)."""

    where: str
    lines: list[str]


MOST_LINES = 40


def your_lines(item: Item, rec: dict) -> Lines | None:
    """The lines of the student's own code a failed record's diagnosis is about: the exercise's function (or class)
    as they wrote it, the line an error names marked →; or a few lines around that line when the function is not
    found. None when it passed or no source was kept (a record made before it was)."""
    source = rec.get("source") or ""
    if rec["passed"] or not source:
        return None
    text = source.splitlines()
    named = {int(n) for n in re.findall(r"\bline (\d+)", " ".join(filter(None, [rec["stopped"], rec["diagnosis"],
                                                                                  rec.get("trace")])))}
    first, last, where = _span(source, item), None, ""
    if first is not None:
        first, last = first
        where = f"lines {first}–{last} ({'the' if not named else 'the line the error names marked →, in the'} " \
                f"function you wrote)"
    elif named:
        n = min(named)
        first, last, where = max(1, n - 3), min(len(text), n + 3), f"around line {n} (marked →), which the error names"
    else:
        return None
    last = min(last, first + MOST_LINES - 1, len(text))
    width = len(str(last))
    return Lines(where, [f"{'→' if i in named else ' '} {i:>{width}} │ {text[i - 1]}" for i in range(first, last + 1)])


def _span(source: str, item: Item) -> tuple[int, int] | None:
    """(first, last) line of the exercise's function or class in SOURCE (parsed, never run), or None."""
    name = all_exercises()[item.exercise].function if item.exercise in all_exercises() else ""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name:
            return node.lineno, node.end_lineno or node.lineno
    return None


def _num(v) -> str:
    return escape(f"{v:.3g}" if isinstance(v, int | float) else str(v))


# -------------------------------------------------------------------- the class
NUMBER = re.compile(r"-?\d+\.\d+(?:e[+-]?\d+)?|-?\d+e[+-]?\d+|\b\d{3,}\b")
# a quoted input ('a batch of 64'): a quote that opens and closes between words, so that an apostrophe (the
# student's, don't, the students') is not taken for one; inside, an apostrophe between two letters is text
QUOTED = re.compile(r"(?<!\w)'(?:[^'\n]|(?<=\w)'(?=\w))*'(?!\w)")


def mistake_of(rec: dict) -> str | None:
    """What a record's student got wrong, in words shared by every student who made that mistake (the key its group
    is found by, never shown: an example is): the diagnosis (or why it stopped) up to its first measured detail,
    with numbers and quoted inputs masked. None when it passed."""
    if rec["passed"]:
        return None
    text = said(rec).split("; the first difference")[0]
    text = re.sub(r"line \d+", "line …", text)
    return QUOTED.sub("'…'", NUMBER.sub("…", text))


def said(rec: dict) -> str:
    """What a failed record's feedback says it got wrong, in full: why it stopped, or the diagnosis."""
    return rec["stopped"] or rec["diagnosis"] or "a check failed"


SHORT = 200  # a diagnosis on the class page: this many characters, cut between words, the rest on expand


@dataclass
class Spread:
    """One exercise across the class: its scores (handed in or not) and who made which mistake."""

    item: Item
    scores: list[float] = field(default_factory=list)
    passed: int = 0
    mistakes: dict[str, list[str]] = field(default_factory=dict)  # its key (mistake_of) -> the students
    example: dict[str, str] = field(default_factory=dict)  # its key -> the first student's diagnosis, in full


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
                s.example.setdefault(kind, said(rec))
    return out


def class_html(title: str, items: list[Item], table: dict[str, dict[str, dict]], slug: dict[str, str],
               made: str, notes: list[str] | None = None) -> str:
    """The class page: the notes the terminal showed (NOTES), per exercise its pass rate and score spread, the
    mistakes ranked by how many students made them, and a student × exercise grid linking to each feedback page."""
    stats = spreads(items, table)
    n = len(table)
    body = [f"<h1>{escape(title)}</h1>", f'<p class="muted">{escape(made)}</p>',
            # in one order (each once) whichever run wrote them: one run or the parts --merge joined
            *(f'<p class="note">Note: {escape(note)}</p>' for note in sorted(set(notes or []))),
            f"<p>{n} student{'s' if n != 1 else ''}, {len(items)} exercise{'s' if len(items) != 1 else ''}.</p>",
            "<h2>Exercises</h2>", _exercise_table(stats, n), "<h2>What the class got wrong</h2>",
            _mistake_table(stats, slug), "<h2>Students</h2>", _grid(items, table, slug),
            _adjusted_table(items, table, slug), _similar(items, table, slug)]
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
    """The mistakes ranked by how many students made them: one real diagnosis per group (its first student's, numbers
    and all), the rest of a long one on expand, the count beside it and every student linked."""
    ranked = sorted(((len(who), s.item, kind, who, s.example[kind]) for s in stats for kind, who in s.mistakes.items()),
                    key=lambda r: (-r[0], r[1].file, r[2]))
    if not ranked:
        return "<p>Every student passed every exercise.</p>"
    rows = "".join(
        f'<tr><td class="n">{count}</td><td>{escape(item.exercise)}</td><td class="diagnosis">{_example(text, who)}'
        "</td><td>" + ", ".join(f'<a href="feedback/{slug[w]}.html#{anchor(item.file)}">{escape(w)}</a>' for w in who)
        + "</td></tr>" for count, item, kind, who, text in ranked)
    return ('<table class="mistakes"><tr><th>students</th><th>exercise</th><th>diagnosis (the first student\'s, word '
            "for word; a long one in full on expand)</th><th>who</th></tr>" + rows + "</table>")


def _example(text: str, who: list[str]) -> str:
    """One student's diagnosis: whole when short, else its first words and the rest on expand (a <details>)."""
    by = f'<span class="muted"> ({escape(who[0])}{" and " + str(len(who) - 1) + " more" if len(who) > 1 else ""})' \
         "</span>"
    if len(text) <= SHORT:
        return escape(text) + by
    cut = text[:SHORT].rsplit(" ", 1)[0]
    return f"<details><summary>{escape(cut)} …{by}</summary>{escape(text)}</details>"


def _similar(items: list[Item], table: dict[str, dict[str, dict]], slug: dict[str, str]) -> str:
    """The pairs of near-identical files per exercise (gradlab.practice.classroom.similar), side by side: a hint, never
    a grade; when there is none, a line that says so, and what was set aside either way."""
    found = []
    for item in items:
        sources = {s: recs[item.file].get("source") or "" for s, recs in table.items()}
        found += similar.pairs(item.file, sources, starter(all_exercises()[item.exercise], item.file))
    rows = []
    for p in found:
        sides = "".join(f'<td><a href="feedback/{slug[s]}.html#{anchor(p.file)}">{escape(s)}</a><pre>'
                        f'{escape(table[s][p.file].get("source") or "")}</pre></td>' for s in (p.one, p.other))
        rows.append(f"<details><summary>{escape(p.one)} and {escape(p.other)}: {escape(p.file)}, "
                    f"{100 * p.share:.0f} % of their code in common</summary><table class=\"pair\"><tr>{sides}</tr>"
                    "</table></details>")
    at = f"{100 * similar.THRESHOLD:.0f} %"
    found_text = "".join(rows) if rows else f'<p class="no-pair">No pair of submissions at least {at} similar.</p>'
    return ("<h2>Similar submissions</h2><p>A hint, never a grade: the pairs of files of one exercise that are "
            f"at least {at} similar once names, comments, docstrings, layout and the code of the exercise's starter "
            "file (what <code>gradlab exercise NAME</code> writes) are set aside; a file with little code of its own "
            f"beyond the starter (fewer than {similar.MIN_KGRAMS} runs of {similar.K} tokens) is in no pair. Read "
            "them side by side before concluding anything.</p>" + found_text)


def _mark_adjusted(rec: dict) -> str:
    """✎ beside a score that was adjusted after its check, with what changed it on hover."""
    lines = adjusted(rec)
    return (f' <span class="adj" title="{escape("; ".join(lines))} (the check gave {fmt(rec["graded"])})">✎</span>'
            if lines else "")


def _adjusted_table(items: list[Item], table: dict[str, dict[str, dict]], slug: dict[str, str]) -> str:
    rows = "".join(f'<tr><td><a href="feedback/{slug[s]}.html#{anchor(i.file)}">{escape(s)}</a></td>'
                   f'<td>{escape(i.exercise)}</td><td class="n">{fmt(recs[i.file]["graded"])}</td>'
                   f'<td class="n">{fmt(recs[i.file]["score"])}</td><td>{escape("; ".join(adjusted(recs[i.file])))}'
                   "</td></tr>" for s, recs in table.items() for i in items if adjusted(recs[i.file]))
    return ('<h2>Adjusted after the check</h2><table class="adjusted"><tr><th>student</th><th>exercise</th>'
            f"<th>the check gave</th><th>score</th><th>why</th></tr>{rows}</table>" if rows else "")


def _grid(items: list[Item], table: dict[str, dict[str, dict]], slug: dict[str, str]) -> str:
    head = "".join(f"<th>{escape(i.file)}</th>" for i in items)
    rows = []
    for student, recs in table.items():
        cells = "".join(f'<td class="n {cell_class(recs[i.file])}"><a href="feedback/{slug[student]}.html#'
                        f'{anchor(i.file)}">{fmt(recs[i.file]["score"])}</a>{_mark_adjusted(recs[i.file])}</td>'
                        for i in items)
        total = sum(recs[i.file]["score"] for i in items)
        rows.append(f'<tr><td><a href="feedback/{slug[student]}.html">{escape(student)}</a></td>{cells}'
                    f'<td class="n">{fmt(total)}</td></tr>')
    return (f'<table class="grid"><tr><th>student</th>{head}<th>total ({fmt(sum(i.points for i in items))})</th>'
            "</tr>" + "".join(rows) + "</table>")
