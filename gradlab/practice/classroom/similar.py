"""Similarity hints for `gradlab grade`: pairs of submissions of one exercise whose code is near-identical once names,
comments, docstrings and layout are set aside. A hint for a teacher to read the two files side by side, never a grade.

How: each file is parsed (never run) and walked into a sequence of tokens, the syntax tree's node kinds with the
attributes and constants the code uses, every name a student chose renamed by order of first use (`v0`, `v1`, …) and
every docstring dropped; comments and layout never reach the tree. Its fingerprint is the set of hashes of every run
of K tokens (the k-grams of MOSS, Schleimer, Wilkerson and Aiken, "Winnowing", SIGMOD 2003, kept whole: a file here
is tens of lines). The k-grams of the starter file every student was given are removed from each, and those a quarter
of the class (at least 3 files) share: the usual way to write that part. Two files are similar when the Jaccard index
of what is left is at least THRESHOLD. Our own code rather than a library (copydetect, the well-kept one, tokenizes
with pygments and writes a report of its own): it needs nothing installed, sees the syntax tree Python itself reads,
and gives plain pairs that the class page shows in its own way.
"""

from __future__ import annotations

import ast
import hashlib
import math
from collections import Counter
from dataclasses import dataclass

K = 5  # tokens per k-gram
THRESHOLD = 0.9  # Jaccard index of two files' k-grams (beyond the starter's) from which they are shown as a pair
MIN_KGRAMS = 8  # a file with fewer k-grams of its own (a starter barely touched) is never paired
MOST_PAIRS = 20  # per exercise, the most similar first
COMMON_SHARE, COMMON_LEAST = 0.25, 3  # a k-gram in this share of the class's files (and at least 3) is the usual way
# to write that part (the right answer of a three-line exercise), shared by no one in particular: set aside


@dataclass(frozen=True)
class Pair:
    """Two students' files of one exercise and how much of their normalised code they share (0 to 1)."""

    file: str
    one: str
    other: str
    share: float


def tokens(source: str) -> list[str] | None:
    """SOURCE's syntax tree as tokens, names renamed by first use, docstrings dropped; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names: dict[str, str] = {}

    def name(text: str) -> str:
        return names.setdefault(text, f"v{len(names)}")

    out = []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:]  # a docstring: the exercise's text, the same in every starter
        out.append(type(node).__name__)
        if isinstance(node, ast.Name):
            out.append(name(node.id))
        elif isinstance(node, ast.arg):
            out.append(name(node.arg))
        elif isinstance(node, ast.Attribute):
            out.append("." + node.attr)  # torch.softmax, x.shape: the API used, not a name chosen
        elif isinstance(node, ast.Constant):
            out.append(repr(node.value)[:40])
    return out


def kgrams(source: str) -> set[str]:
    """The hashes of every K consecutive tokens of SOURCE (empty when it does not parse)."""
    toks = tokens(source) or []
    return {hashlib.blake2b("\0".join(toks[i:i + K]).encode(), digest_size=8).hexdigest()
            for i in range(len(toks) - K + 1)}


def pairs(file: str, sources: dict[str, str], starter: str) -> list[Pair]:
    """The pairs of students (SOURCES: {student: their file's text}) whose FILE is near-identical beyond the STARTER,
    the most similar first, at most MOST_PAIRS."""
    given = kgrams(starter)
    prints = {s: kgrams(text) - given for s, text in sources.items() if text}
    seen = Counter(g for p in prints.values() for g in p)
    usual = {g for g, n in seen.items() if n >= max(COMMON_LEAST, math.ceil(COMMON_SHARE * len(prints)))}
    prints = {s: p - usual for s, p in prints.items()}
    prints = {s: p for s, p in prints.items() if len(p) >= MIN_KGRAMS}
    found = []
    students = list(prints)
    for i, one in enumerate(students):
        for other in students[i + 1:]:
            a, b = prints[one], prints[other]
            share = len(a & b) / len(a | b)
            if share >= THRESHOLD:
                found.append(Pair(file, one, other, share))
    return sorted(found, key=lambda p: (-p.share, p.one, p.other))[:MOST_PAIRS]
