"""Submissions as learning-management systems download them: who handed in each file, and which exercise a renamed file
is. `gradlab grade` reads a class's folder through these (gradlab/practice/classroom/gradebook.py).

Canvas, "Download Submissions" (instructure/canvas-lms, lib/content_zipper.rb, get_filename and add_upload_submission):
one flat folder, each file named `{name}_{LATE_}{user id}_{attachment id}_{file's name}`: the student's sortable name
lower-cased with every character that is not a letter, digit or _ removed ("Smith, John": smithjohn; `_digits_` runs
removed too), `LATE` only for a late submission, `anon_{id}` for the user id under anonymous grading (and no name).
A file handed in again under a name the student's folder already holds is renamed by Canvas with `-1`, `-2` ... before
its extension (app/models/attachment.rb, make_unique_filename; from the 8th, a random UUID): softmax_grad-1.py.

Moodle, assignment "Download all submissions" (moodle/moodle, mod/assign/classes/downloader.php, get_student_prefix and
load_submissionplugin_filelist): each student's prefix is `{full name}_{participant id}` (an _ in the name becomes a
space); with "Download submissions in folders" (the default since Moodle 3.1) a folder
`{prefix}_assignsubmission_file` per student and plugin (older versions end it with `_`), else flat files
`{prefix}_assignsubmission_file_{file's name}`.

What a download says of when a file was handed in: Canvas's names carry `LATE` (get_filename, lines 452-456 of
lib/content_zipper.rb at commit 05e9653c: `submission.late?` when the zip is made: Canvas's own verdict, against the
due date Canvas holds for that student, with no time); the zip's entries carry the time the zip was made, not the
submission's (add_attachment_to_zip, lines 314-340, writes each with rubyzip's get_output_stream and no time, and
rubyzip's Entry defaults to `::Zip::DOSTime.now`, lib/zip/entry.rb). Moodle's names carry no lateness, and its
entries are streamed with no time either (mod/assign/classes/downloader.php, download_zip; files/classes/local/
archive_writer/zip_writer.php, add_file_from_stored_file, lines 112-116: ZipStream's addFileFromStream with no
options, whose File::defaultTo takes `new DateTime()`, maennchen/ZipStream-PHP src/Option/File.php line 30). So a
download gives no submission time: gradlab reads the LATE marker (late_marked) and nothing from a file's time.

GitHub Classroom: `gh classroom clone student-repos` makes a folder per student's repository (`{assignment}-{login}`):
a folder per student, as gradlab reads any class.

A file whose name is not the expected one but close to it is never a silent "missing": Canvas's resubmission suffix, a
browser's download copy (`softmax_grad (1).py`) and a change of case are the expected file (graded, the feedback says
which file it was); any other close name (difflib ratio >= CLOSE) is named in the "missing" line.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass

CANVAS = re.compile(r"(?:(?P<who>\w+?)_)??(?P<late>(?-i:LATE)_)?(?P<id>anon_[A-Za-z0-9]+|\d+)_(?P<file_id>\d+)_"
                    r"(?P<file>.+)", re.IGNORECASE)
MOODLE_FILE = re.compile(r"(?P<who>.+?)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.+)")
MOODLE_FOLDER = re.compile(r"(?P<who>.+?)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?")
# LATE in capitals only: Canvas lower-cases the name before it (a student called Late is not marked late).
# The first match wins (lazy names): what follows the ids is the student's own file name, which may copy another's
# prefix; the name before them cannot hold one (Canvas removes `_digits_` from it, Moodle makes every _ a space).
# Canvas's -N (or -UUID) before the extension, a browser's " (N)": what they add to the name the student gave
ADDED = re.compile(r"(?:-\d{1,3}|-[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}| \(\d{1,3}\))(?=\.[A-Za-z0-9]+$)")
CLOSE = 0.8  # difflib's ratio above which a file's name is named as the one maybe meant


@dataclass(frozen=True)
class Owner:
    """Whose an entry of a download is: WHO (the name the LMS wrote), ID (its user or participant id), FILE (the name
    the student gave the file; "" for a Moodle folder), LMS ("canvas" | "moodle"), LATE (Canvas's LATE marker)."""

    who: str
    id: str
    file: str
    lms: str
    late: bool = False


def owner(name: str, is_dir: bool) -> Owner | None:
    """The Owner of NAME, an entry at the top of a class's folder, when an LMS named it; None for any other name."""
    if is_dir:
        m = MOODLE_FOLDER.fullmatch(name)
        return Owner(m["who"], m["id"], "", "moodle") if m else None
    if m := MOODLE_FILE.fullmatch(name):
        return Owner(m["who"], m["id"], m["file"], "moodle")
    if m := CANVAS.fullmatch(name):
        return Owner(m["who"] or m["id"], m["id"], m["file"], "canvas", bool(m["late"]))
    return None


def late_marked(path: str) -> bool:
    """Whether the file or folder at PATH is one Canvas's download marked LATE (its name; nothing else in a download
    says when a file was handed in: see the module's docstring)."""
    found = owner(os.fsdecode(os.path.basename(path)), os.path.isdir(path))
    return found is not None and found.late


def students(owners: dict[str, Owner]) -> dict[str, str]:
    """{entry: student name} for OWNERS ({entry: Owner}): the name the LMS wrote, with its id in parentheses where two
    ids share a name (two students called John Smith)."""
    ids: dict[str, set[str]] = {}
    for o in owners.values():
        ids.setdefault(o.who, set()).add(o.id)
    return {entry: o.who if len(ids[o.who]) == 1 else f"{o.who} ({o.id})" for entry, o in owners.items()}


def same_file(name: str, expected: str) -> bool:
    """Whether NAME is EXPECTED as an LMS or a browser renamed it: Canvas's -1 for a file handed in again, a browser's
    " (1)", a change of case."""
    return ADDED.sub("", name).casefold() == expected.casefold()


def close_to(names: list[str], expected: str) -> str | None:
    """The name of NAMES most like EXPECTED (difflib ratio >= CLOSE, case ignored), or None."""
    folded = {n.casefold(): n for n in names}
    found = difflib.get_close_matches(expected.casefold(), list(folded), n=1, cutoff=CLOSE)
    return folded[found[0]] if found else None


def shown_file(path: str, owner_of: Owner | None) -> str:
    """The name a student gave the file at PATH: Canvas's and Moodle's prefixes removed."""
    return owner_of.file if owner_of is not None and owner_of.file else os.path.basename(path)


def canvas_id(records: dict[str, dict]) -> str:
    """The Canvas user id of a student whose files came from a Canvas download (the id in a graded file's name, from
    RECORDS' "found"), for canvas.csv's ID column; "" otherwise (or under anonymous grading)."""
    for rec in records.values():
        first = str(rec.get("found") or "").split("/")[0]
        found = owner(first, False) if first else None
        if found is not None and found.lms == "canvas" and found.id.isdigit():
            return found.id
    return ""
