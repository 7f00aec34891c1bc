"""How many words of prose a page of the docs site holds: what a reader reads straight through, outside code blocks,
generated tables (bench and fields blocks), HTML comments and collapsed details (`<details>` … `</details>`, or a
`???` admonition and its indented body). Issue #47 caps a lesson page at MOST words (tests/test_pages.py).

    python scripts/prose.py [PAGE.md ...]      (default: every lesson page, longest first)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ROOT / "docs" / "lessons"
MOST = 1500

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
GENERATED = re.compile(r"<!-- (bench|fields): [^>]*-->.*?<!-- /\1 -->", re.S)
COMMENT = re.compile(r"<!--.*?-->", re.S)
DETAILS = re.compile(r"<details\b.*?</details>", re.S)
COLLAPSED = re.compile(r"^\?\?\?\+? .*\n(?:(?:[ \t]*\n)*(?: {4}|\t).*\n?)*", re.M)
WORD = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*")


def prose(text: str) -> str:
    """TEXT without what a reader does not read straight through (see the module's docstring)."""
    for pattern in (GENERATED, FENCE, DETAILS, COLLAPSED, COMMENT):
        text = pattern.sub("", text)
    return re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)  # an image's alt text is not read


def words(text: str) -> int:
    """Words of prose in a page's Markdown TEXT (a word: letters or digits, joined by ' . - inside)."""
    return len(WORD.findall(prose(text)))


def lesson_pages() -> list[Path]:
    """Every lesson's page (docs/lessons/, but its index)."""
    return sorted(p for p in LESSONS.glob("*.md") if p.name != "index.md")


def main(paths: list[str]) -> int:
    pages = [Path(p) for p in paths] or lesson_pages()
    counts = sorted(((words(p.read_text(encoding="utf-8")), p) for p in pages), key=lambda c: -c[0])
    for n, page in counts:
        print(f"{n:6,}  {'over ' + str(MOST) if n > MOST else '':9}  {page}")
    return 1 if any(n > MOST for n, _ in counts) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
