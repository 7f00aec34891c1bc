"""A class graded on several machines: `gradlab grade SUBMISSIONS ... --shard K/N --seed S --out PART` grades the K-th
of N parts of the students, and `gradlab grade --merge PART1 ... PARTN --out OUT` writes from the parts exactly what one
run over the whole class would write (grades.csv, canvas.csv, class.html, the feedback, results.json).

A student's part is fixed by their name alone (SHA-256 of it, modulo N): the same student is in the same part on every
machine and every run, whatever the others are called or whichever machine lists the folder. Every part draws the
inputs from the same seed (--seed, required): a student's grade does not depend on which machine graded it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass

from gradlab.errors import GradlabError
from gradlab.kit.text import sanitize
from gradlab.practice.classroom import course
from gradlab.version import __version__


@dataclass(frozen=True)
class Shard:
    """Part K (1..N) of N."""

    k: int
    n: int

    def holds(self, student: str) -> bool:
        digest = hashlib.sha256(student.encode("utf-8", "surrogatepass")).digest()
        return int.from_bytes(digest[:8], "big") % self.n == self.k - 1

    def label(self) -> str:
        return f"{self.k}/{self.n}"

    def __str__(self) -> str:
        return self.label()


def parse(text: str) -> Shard:
    """K/N as --shard gives it (1 <= K <= N): one line of error otherwise."""
    m = re.fullmatch(r"\s*(\d{1,6})\s*/\s*(\d{1,6})\s*", text)
    if not m or not 1 <= int(m[1]) <= int(m[2]):
        raise GradlabError(f"--shard {text!r}: give K/N, part K of N with 1 <= K <= N (1/4 ... 4/4)")
    return Shard(int(m[1]), int(m[2]))


RESULTS = "results.json"  # what a part's --out folder holds (gradlab.practice.classroom.grade writes it)


@dataclass(frozen=True)
class Merged:
    """The parts of one class joined: what one run over the whole class would write from
    (gradlab.practice.classroom.grade)."""

    items: list[course.Item]
    table: dict[str, dict[str, dict]]  # {student: {file: record}}, in the order the whole class's folder lists them
    seed: int
    made: str  # the last part's "graded ... UTC by gradlab ..." line
    source: str  # the course file, or --exercise NAME
    parts: int
    notes: list[str]  # every part's notes, each once (class.html shows them in one order: gradlab.practice.classroom
    # .feedback.class_html)


def _part(path: str) -> dict:
    """A part's results.json, checked to be a whole shard's."""
    file = os.path.join(path, RESULTS)
    try:
        with open(file, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise GradlabError(f"--merge {sanitize(path)}: no {RESULTS} in it; give the --out folders of "
                           "`gradlab grade ... --shard K/N`") from None
    except (OSError, ValueError) as e:
        raise GradlabError(f"--merge {sanitize(path)}: {RESULTS} cannot be read ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("shard"), str) or data.get("partial"):
        raise GradlabError(f"--merge {sanitize(path)}: not a finished part of a class (its {RESULTS} has no "
                           "shard, or its grading was interrupted: run its `--shard` command again)")
    for key in ("seed", "course", "students", "order", "made", "source"):
        if key not in data:
            raise GradlabError(f"--merge {sanitize(path)}: its {RESULTS} lacks {key!r}")
    return data


def merged(parts: list[str]) -> Merged:
    """`gradlab grade --merge PART...`: the parts of one class, checked to be every part exactly once, of one course,
    seed and gradlab, joined."""
    if not parts:
        raise GradlabError("--merge needs the --out folders of the class's parts (gradlab grade --merge P1 P2 "
                           "--out OUT)")
    datas = [_part(p) for p in parts]
    first = datas[0]
    for path, data in zip(parts, datas, strict=True):
        for key, what in (("seed", "seed"), ("course", "course"), ("gradlab", "gradlab version"),
                          ("source", "course file")):
            if data.get(key) != first.get(key):
                raise GradlabError(f"--merge: {sanitize(path)} was graded with another {what} than {sanitize(parts[0])}"
                                   f" ({data.get(key)!r}, not {first.get(key)!r}): grade every part the same way")
    if first["gradlab"] != __version__:
        raise GradlabError(f"--merge: the parts were graded by gradlab {first['gradlab']}, this is {__version__}: "
                           "merge with the same gradlab")
    shards = [parse(d["shard"]) for d in datas]
    n = shards[0].n
    have = sorted(s.k for s in shards)
    if any(s.n != n for s in shards) or have != list(range(1, n + 1)):
        raise GradlabError(f"--merge: the parts are {', '.join(s.label() for s in shards)}; give each of 1/{n} ... "
                           f"{n}/{n} once")
    students: dict[str, tuple[int, dict]] = {}
    for data in datas:
        for student, recs in data["students"].items():
            if student in students:
                raise GradlabError(f"--merge: {sanitize(student)} is in two parts; were they graded from the same "
                                   "folder?")
            students[student] = (data["order"][student], recs)
    table = {s: recs for s, (_, recs) in sorted(students.items(), key=lambda kv: kv[1][0])}
    items = [course.Item(**i) for i in first["course"]]
    made = max(d["made"] for d in datas)  # "graded YYYY-MM-DD HH:MM UTC ...": the last part's
    notes = list(dict.fromkeys(n for d in datas for n in d.get("notes", []) if isinstance(n, str)))
    return Merged(items, table, first["seed"], made, first["source"], n, notes)
