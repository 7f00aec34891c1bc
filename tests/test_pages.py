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


def test_the_api_page_documents_every_public_function_and_exception():
    """reference/api.md has a mkdocstrings block (`::: gradlab.api.NAME`) for every function gradlab/__init__.py
    names, and one for each exception of gradlab.errors; the fields blocks of Result and Claim are checked by
    tests/test_readme.py."""
    import ast
    import inspect

    import gradlab
    from gradlab import errors

    page = (DOCS / "reference" / "api.md").read_text()
    blocks = set(re.findall(r"^::: ([\w.]+)$", page, re.M))
    tree = ast.parse((REPO / "gradlab" / "__init__.py").read_text())
    public = {a.name for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "gradlab.api" for a in n.names}
    assert public and all(callable(getattr(gradlab, name)) for name in public)
    assert {f"gradlab.api.{name}" for name in public} <= blocks
    exceptions = {n for n, c in vars(errors).items() if inspect.isclass(c) and issubclass(c, BaseException)
                  and c.__module__ == errors.__name__}
    assert {f"gradlab.errors.{name}" for name in exceptions} <= blocks
    assert {"gradlab.kit.result.Result", "gradlab.kit.result.Claim"} <= blocks
    assert {"<!-- fields: gradlab.kit.result.Result -->", "<!-- fields: gradlab.kit.result.Claim -->"} <= set(
        page.splitlines())
