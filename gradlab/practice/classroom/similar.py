"""Similarity hints for `gradlab grade`: pairs of submissions of one exercise whose code is near-identical once names,
comments, docstrings and layout are set aside. A hint for a teacher to read the two files side by side, never a grade.

How: each file is parsed (never run) and walked into a sequence of tokens, the syntax tree's node kinds with the
attributes and constants the code uses, every name a student chose renamed by order of first use (`v0`, `v1`, …) and
every docstring dropped; comments and layout never reach the tree. Its fingerprint is the set of hashes of every run
of K tokens (the k-grams of MOSS, Schleimer, Wilkerson and Aiken, "Winnowing", SIGMOD 2003, kept whole: a file here
is tens of lines). The k-grams of the starter file every student was given (`gradlab exercise NAME` writes it) are
removed from each, and nothing else: a rule that set aside what many files share (a quarter of the class, at least 3)
hid a ring of 3 identical copies in a class of 5 (issue #44). Two files are similar when the Jaccard index of what is
left is at least THRESHOLD; a file with fewer than MIN_KGRAMS k-grams of its own is in no pair. Our own code rather
than a library (copydetect, the well-kept one, tokenizes with pygments and writes a report of its own): it needs
nothing installed, sees the syntax tree Python itself reads, and gives plain pairs that the class page shows in its own
way. Two students who write the only short answer an exercise has are paired too: a hint, read before concluding."""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass

K = 5  # tokens per k-gram
THRESHOLD = 0.9  # Jaccard index of two files' k-grams (beyond the starter's) from which they are shown as a pair
MIN_KGRAMS = 8  # a file with fewer k-grams of its own (a starter barely touched) is never paired
MOST_PAIRS = 20  # per exercise, the most similar first


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

    for node in ast.walk(tree):  # docstrings out first: ast.walk queues a node's children before it yields the node
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:]  # a docstring: the exercise's text, the same in every starter
    out = []
    for node in ast.walk(tree):
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
