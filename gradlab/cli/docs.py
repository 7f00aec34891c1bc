"""`gradlab docs`: where the docs site is (site/index.html in a checkout, built by `make docs`), building it first
when asked (`--build`, with mkdocs-material: the extra `gradlab-teach[docs]`), opening it in a browser with `--open`."""

from __future__ import annotations

import os
import subprocess
import sys
import webbrowser

import click

from gradlab.assets import CHECKOUT
from gradlab.errors import GradlabError

CONFIG = CHECKOUT / "mkdocs.yml"
INDEX = CHECKOUT / "site" / "index.html"


def build(quiet: bool = True) -> None:
    """mkdocs build --strict into site/ (seconds); one line on failure."""
    if not CONFIG.is_file():
        raise GradlabError("the docs site's sources (mkdocs.yml, docs/) are in gradlab's repository, not in an "
                           "installed wheel; read the pages there, or clone it and run `make docs`")
    try:
        import material  # noqa: F401  (the theme; mkdocs comes with it)
        import mkdocstrings  # noqa: F401  (the API reference, read from the code)
    except ImportError as e:
        raise GradlabError(f"building the docs site needs {e.name}: pip install 'gradlab-teach[docs]' "
                           "(or make install)") from None
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", *(["--quiet"] if quiet else []),
                           "-f", str(CONFIG)], capture_output=True, text=True, cwd=CHECKOUT,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})  # material 9.7+'s banner about its successor
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise GradlabError(f"mkdocs build --strict failed: {last}")


@click.command(short_help="Where the docs site is (site/index.html, no server needed); --build, --open.")
@click.option("--build", "do_build", is_flag=True, help="Build it first (mkdocs build --strict, a few seconds).")
@click.option("--open", "do_open", is_flag=True, help="Open it in the default web browser.")
def docs(do_build: bool, do_open: bool) -> int:
    """Print the path of the docs site's first page, site/index.html: a page per lesson, teaching a class,
    reference and development. It opens from disk, offline. `make docs` regenerates its outputs and builds it."""
    if do_build or (not INDEX.is_file() and CONFIG.is_file()):
        build()
    if not INDEX.is_file():
        raise GradlabError("the docs site is not built here; run `gradlab docs --build` or `make docs`")
    click.echo(INDEX.as_uri())
    if do_open:
        webbrowser.open(INDEX.as_uri())
    return 0
