"""What the site's pages say, against what gradlab does: the error lines they quote, and how much prose a lesson
page holds (issue #47)."""

import re
import shlex

import pytest
from conftest import REPO, invoke

DOCS = REPO / "docs"
# `gradlab ARGS` prints `gradlab: error: ...` (the line wrapped in the page's source, so any whitespace between)
QUOTED_ERROR = re.compile(r"`(gradlab [^`]+)`\s+prints\s+`(gradlab: error: [^`]+)`")


def quoted_errors() -> list[tuple[str, str, str]]:
    return [(page.relative_to(DOCS).as_posix(), m[1], m[2]) for page in sorted(DOCS.rglob("*.md"))
            for m in QUOTED_ERROR.finditer(page.read_text())]


def test_the_pages_quote_some_error_lines():
    assert any(page == "reference/output.md" for page, _, _ in quoted_errors())


@pytest.mark.parametrize(("page", "command", "line"), quoted_errors())
def test_an_error_line_a_page_quotes_is_what_gradlab_prints(page, command, line):
    result = invoke(*shlex.split(command)[1:])
    assert result.exit_code == 2 and result.stderr.strip() == line, (page, result.stderr)
