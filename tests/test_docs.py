"""The docs site (mkdocs.yml, docs/): it builds with --strict, fetches nothing from the network, opens from disk in a
real browser, and the README stays a short page that links into it.

The site is built once per test process into a temporary folder (about 3 s); `make docs` builds the same into site/.
"""

import math
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import REPO, once

from gradlab.cli import docs as docs_site

pytest.importorskip("material", reason="the docs site needs mkdocs-material: the extra `docs` (make install has it)")
pytest.importorskip("mkdocstrings", reason="the API page needs mkdocstrings-python: the extra `docs`")


@pytest.fixture
def site(tmp_path_factory) -> Path:
    def build(out: Path) -> None:
        proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f",
                               str(REPO / "mkdocs.yml"), "-d", str(out)], capture_output=True, text=True, cwd=REPO,
                              env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
        assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"

    return once(tmp_path_factory, "site", build)


class Fetched(HTMLParser):
    """Every URL a browser would fetch on its own when it opens the page: scripts, stylesheets, icons, preloads,
    images, frames, media (a link a reader clicks, <a href>, is not fetched)."""

    FETCHING = frozenset({("script", "src"), ("link", "href"), ("img", "src"), ("img", "srcset"), ("iframe", "src"),
                ("source", "src"), ("source", "srcset"), ("video", "src"), ("audio", "src"), ("embed", "src"),
                ("object", "data"), ("video", "poster"), ("input", "src")})

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if (tag, name) in self.FETCHING and value:
                self.urls.append(value)
            if name == "style" and value:
                self.urls += re.findall(r"url\(\s*['\"]?([^'\")]+)", value)


REMOTE = re.compile(r"^(https?:)?//", re.I)


def test_the_site_builds_strictly_with_every_page_in_its_navigation(site):
    pages = sorted(p.relative_to(REPO / "docs").with_suffix(".html") for p in (REPO / "docs").rglob("*.md"))
    assert pages and all((site / p).is_file() for p in pages), [p for p in pages if not (site / p).is_file()]
    for name in ("index", "lessons/log1pexp", "teach/grading", "reference/cli", "develop/architecture"):
        assert (site / f"{name}.html").is_file(), name


def test_every_link_to_a_heading_finds_it(site):
    """A link with #anchor lands on an id the target page has (mkdocs's own anchor check passed a link to
    #quick-and-the-preset while the page's heading, `--quick` and the preset, has the id -quick-and-the-preset)."""
    ids = {p: set(re.findall(r'\bid="([^"]+)"', p.read_text(encoding="utf-8"))) for p in site.rglob("*.html")}
    broken = []
    for page in ids:
        if page.name == "404.html":
            continue
        for target, anchor in re.findall(r'href="([^"#:]*\.html)?#([^"]+)"', page.read_text(encoding="utf-8")):
            where = (page.parent / target).resolve() if target else page
            if where in ids and anchor not in ids[where]:
                broken.append(f"{page.relative_to(site)} → {target}#{anchor}")
    assert not broken, broken


def test_no_page_fetches_anything_from_the_network(site):
    """Offline-clean: no web fonts, no script or stylesheet from a CDN; what a page loads is in the site."""
    for page in site.rglob("*.html"):
        parser = Fetched()
        parser.feed(page.read_text(encoding="utf-8"))
        remote = [u for u in parser.urls if REMOTE.match(u)]
        assert not remote, f"{page.relative_to(site)} fetches {remote}"
        if page.name == "404.html":  # a web server's error page, with root-relative links; unused from disk
            continue
        for local in (u.split("#")[0].split("?")[0] for u in parser.urls if not REMOTE.match(u) and ":" not in u):
            assert (page.parent / local).resolve().is_file(), f"{page.relative_to(site)} loads a missing {local}"
    for sheet in site.rglob("*.css"):
        text = sheet.read_text(encoding="utf-8")
        remote = re.findall(r"(?:url\(\s*['\"]?|@import\s+['\"])((?:https?:)?//[^'\")]+)", text)
        assert not remote, f"{sheet.relative_to(site)} fetches {remote}"
    assert "fonts.googleapis" not in "".join(p.read_text(encoding="utf-8") for p in site.rglob("*.html"))


def test_the_site_opens_from_disk_in_a_real_browser(site, tmp_path, browser):
    """Each section's first page, opened as a file:// URL with every network name unresolvable, renders: the
    theme's header and navigation, the page's own heading and, on a lesson's page, its generated output."""
    for page, heading, text in [
            ("index.html", "gradlab", "a teacher"),
            ("lessons/log1pexp.html", "gradlab log1pexp", "claims hold"),
            ("teach/grading.html", "Grading a course", "--gradescope"),
            ("reference/cli.html", "Command line", "Usage: gradlab"),
            ("develop/architecture.html", "Architecture", "lesson")]:
        browser.open((site / page).as_uri(), ready="document.querySelector('.md-header')")
        dom = browser.dom()
        assert 'class="md-header' in dom and 'class="md-nav' in dom, f"{page}: the theme did not render"
        h1 = re.search(r"<h1[^>]*>(.*?)</h1>", dom, re.S)
        assert h1 and heading in re.sub(r"<[^>]+>", "", h1.group(1)), f"{page}: {h1 and h1.group(1)}"
        assert text in re.sub(r"<[^>]+>", "", dom).replace("&gt;", ">"), f"{page}: no {text!r}"
        assert re.search(r'href="[./]*(lessons/)?mnist\.html"', dom), f"{page}: the navigation has no lesson pages"
    browser.window(1280, 900)
    browser.open((site / "lessons/log1pexp.html").as_uri(), ready="document.querySelector('.md-header')")
    shot = tmp_path / "site.png"
    shot.write_bytes(browser.screenshot())  # as a window of 1280 × 900 shows it
    assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 20_000
    print(f"screenshot: {shot}")


def test_the_readme_is_short_and_its_links_lead_into_the_site():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert "docs/index.md" in links and all((REPO / link).is_file() for link in links if not REMOTE.match(link)), [
        link for link in links if not (REPO / link).is_file()]


def test_gradlab_docs_prints_where_the_site_is(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from gradlab.cli.main import cli

    index = tmp_path / "site" / "index.html"
    index.parent.mkdir()
    index.write_text("<html></html>")
    monkeypatch.setattr(docs_site, "INDEX", index)
    result = CliRunner().invoke(cli, ["docs"])
    assert result.exit_code == 0 and result.output.strip() == index.as_uri()


def test_gradlab_docs_without_a_site_is_one_line_and_exit_2(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", "import sys; from gradlab.cli import docs as d; from pathlib import "
                           "Path; d.CONFIG = Path(sys.argv[1]) / 'mkdocs.yml'; d.INDEX = Path(sys.argv[1]) / 'i.html';"
                           " from gradlab.cli import main; sys.argv = ['gradlab', 'docs']; main()", str(tmp_path)],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, (
        proc.stderr)


def test_the_float32_facts_the_pages_state():
    """What docs/lessons/log1pexp.md and the lesson's comments say about float32, measured: torch.sigmoid(−100) is 0
    because e¹⁰⁰ overflows (eˣ does from x ≈ 88.72; not a flush: −88 still gives a subnormal), the unit roundoff is
    6e-8 and the ulp of 1 is 1.2e-7, and the faithful port of the tutorial's custom gradient has a NaN second
    derivative once eˣ overflows."""
    import torch

    from gradlab.lessons.log1pexp.lesson import FaithfulPort

    f32 = torch.float32
    assert torch.exp(torch.tensor(100.0)).isinf() and torch.sigmoid(torch.tensor(-100.0)).item() == 0.0
    # "eˣ overflows float32 from x ≈ 88.72": ln of float32's largest number, and exp on either side of it
    assert f"{math.log(torch.finfo(f32).max):.4g}" == "88.72" and "overflows float32 from x ≈ 88.72" in (
        REPO / "docs" / "lessons" / "log1pexp.md").read_text()
    assert torch.exp(torch.tensor(88.72)).isfinite() and torch.exp(torch.tensor(88.73)).isinf()
    s88 = torch.sigmoid(torch.tensor(-88.0)).item()
    assert f"{s88:.3g}" == "6.05e-39" and 0 < s88 < torch.finfo(f32).tiny  # subnormal
    assert f"{torch.finfo(f32).eps:.2g}" == "1.2e-07" and f"{torch.finfo(f32).eps / 2:.2g}" == "6e-08"
    second = {}
    for x0 in (88.0, 89.0, 100.0):
        x = torch.tensor(x0, requires_grad=True)
        (g,) = torch.autograd.grad(FaithfulPort.apply(x), x, create_graph=True)
        (second[x0],) = torch.autograd.grad(g, x)
    assert second[88.0].isfinite() and second[89.0].isnan() and second[100.0].isnan()
