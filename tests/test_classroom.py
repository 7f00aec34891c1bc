"""Classroom commands: list, --explain, all, report (checked in a real headless browser), show."""

import json
import re
from pathlib import Path

import pytest
from conftest import assert_one_line_error, invoke, once

from gradlab.lessons import LESSONS, measured_runtimes
from gradlab.report.explain import _as_markdown, explanation


def test_list_shows_every_lesson_with_idea_options_and_measured_times():
    result = invoke("list", env={"COLUMNS": "400"})
    assert result.exit_code == 0
    measured = measured_runtimes()
    assert f"measured on {measured['cpus']} CPUs on {measured['measured']}" in result.output
    lines = result.output.splitlines()
    for info in LESSONS.values():
        i = next(i for i, line in enumerate(lines) if f"gradlab {info.name} " in line)
        assert info.idea in lines[i] and info.options in lines[i + 1]  # the options under the idea
        t = measured["lessons"].get(info.name)
        if t is None:  # a lesson not measured yet (`make runtimes`) shows "?", not a guess
            assert re.search(r"│\s+\? │", lines[i]), lines[i]
            continue
        assert re.search(rf"│\s+{t['default_s']:.0f} s / {t['quick_s']:.0f} s │", lines[i]), lines[i]


def test_measured_runtimes_cover_every_lesson_and_its_quick_command():
    measured = measured_runtimes()
    missing = sorted(set(LESSONS) - set(measured["lessons"]))
    assert not missing, f"gradlab/runtimes.json has no times for {', '.join(missing)}: run `make runtimes`, commit it"
    assert set(measured["lessons"]) == set(LESSONS)
    for name, info in LESSONS.items():
        assert measured["lessons"][name]["quick_cmd"] == info.command(info.quick), \
            f"{name}'s quick budget changed since its time was measured: run `make runtimes` and commit it"


def test_help_lists_every_lesson_in_teaching_order():
    out = invoke("--help").output
    positions = [out.index(f"  {name} ") for name in LESSONS]
    assert positions == sorted(positions)


@pytest.mark.parametrize("name", list(LESSONS))
def test_every_lesson_explains_itself_from_its_own_source(name):
    module = LESSONS[name].load()
    doc, snippets = explanation(module)
    assert doc and snippets and all(s.code.lstrip().startswith(("def ", "class ")) for s in snippets)
    root = Path(module.__file__).resolve().parents[3]
    folder = Path(module.__file__).resolve().parent
    for s in snippets:  # the shown lines are the file's lines, at the stated line numbers
        # the lesson's own folder (ddp has rooms: batches.py, single.py, ranks.py), or the plumbing it shares with
        # other lessons (gradlab/kit/training.py)
        rooms = [str((folder / p.name).relative_to(root)) for p in folder.glob("*.py")]
        assert s.path in (*rooms, "gradlab/kit/training.py")
        source = (root / s.path).read_text().splitlines()
        assert s.code.splitlines() == source[s.start - 1:s.start - 1 + len(s.code.splitlines())]


def test_explain_flag_prints_math_and_numbered_source():
    result = invoke("log1pexp", "--explain", "--x", "0")
    assert result.exit_code == 0
    assert "the math" in result.output and "where_guard — gradlab/lessons/log1pexp/lesson.py:" in result.output
    line = next(i for i, t in enumerate(Path(LESSONS["log1pexp"].load().__file__).read_text().splitlines(), 1)
                if "return torch.where(x < GUARD, torch.log(1 + torch.exp(x)), x)" in t)
    assert re.search(rf"\b{line}\b.*return torch\.where\(x < GUARD", result.output)


def test_docstring_formulas_become_code_blocks_and_bullets_stay_prose():
    md = _as_markdown("Text:\n\n    a = b\n    c = d\n\n  * a bullet\n    continued\n")
    assert "```\na = b\nc = d\n```" in md and "  * a bullet\n    continued" in md


def test_all_summary_and_exit_code(monkeypatch):
    result = invoke("all", "--quick", "--lessons", "jacobian,log1pexp", "--quiet")
    assert result.exit_code == 0, result.output
    assert "jacobian" in result.output and "all 22 claims hold in 2 lessons" in result.output
    from gradlab.lessons.jacobian import lesson as jacobian

    monkeypatch.setitem(jacobian.METHODS, "torch.func.jacfwd", lambda f, x: jacobian.jacfwd(f)(x) * 2)
    result = invoke("all", "--quick", "--lessons", "jacobian", "--quiet")
    assert result.exit_code == 1 and "1 claims failed: jacobian: methods-agree" in result.output


def test_all_rejects_unknown_lesson():
    assert_one_line_error(invoke("all", "--lessons", "mnist,gan"), "unknown lesson 'gan'")


# The report of every lesson but the two RL ones (40 of the report's 55 s here; they render through the same code,
# and their own tests run them): the whole suite must stay under 5 minutes on 2 cores.
REPORTED = [n for n in LESSONS if n not in ("dqn", "actor-critic")]


@pytest.fixture(scope="session")
def quick_report(tmp_path_factory):
    """The quick report, made once for the session however many processes run the tests (conftest.once)."""
    def make(folder):
        result = invoke("report", "--out", str(folder / "site"), "--quick", "--quiet", "--lessons", ",".join(REPORTED))
        assert result.exit_code == 0, result.output
        assert "claims hold in" in result.output  # the verdict is printed, not only written

    return once(tmp_path_factory, "quick-report", make) / "site"


def test_report_files(quick_report):
    names = sorted(p.name for p in quick_report.iterdir())
    assert names == sorted(["index.html", *[f"{n}.json" for n in REPORTED]])
    for name in REPORTED:
        assert json.loads((quick_report / f"{name}.json").read_text())["lesson"] == name
    page = (quick_report / "index.html").read_text()
    assert "http://" not in page and "https://" not in page  # self-contained: nothing to fetch
    assert page.count('<details class="graph">') == len(REPORTED)  # each lesson's backward graph, drawn inline
    total = sum(len(json.loads((quick_report / f"{n}.json").read_text())["claims"]) for n in REPORTED)
    assert f"all {total} claims hold in {len(REPORTED)} lessons" in page
    assert re.search(r"made on \d{4}-\d\d-\d\d \d\d:\d\d by <code>gradlab report --out .* --quick "
                     r"--lessons \S+</code> · gradlab \S+ · torch \S+", page)


def test_report_in_a_real_browser(quick_report, tmp_path, browser):
    url = (quick_report / "index.html").as_uri()
    browser.open(url, ready="document.body.hasAttribute('data-broken-images')")  # its script counted the images
    dom = browser.dom()
    body = re.search(r"<body([^>]*)>", dom).group(1)
    assert 'data-broken-images="0"' in body, body
    with_curves = [n for n in REPORTED if json.loads((quick_report / f"{n}.json").read_text())["curves"]]
    assert f'data-images="{len(with_curves)}"' in body and len(with_curves) >= 4
    sections = re.findall(r'<section class="lesson" id="([^"]+)">(.*?)</section>', dom, re.S)
    assert [s[0] for s in sections] == REPORTED
    for name, html in sections:
        assert html.count('<table class="result">') >= 1 and '<table class="claims">' in html, name
        assert ("<img" in html) == (name in with_curves), name
        assert "✗" not in html, name
        # the explanation's Markdown is rendered (formulas in code blocks, bullets as a list), not shown as text
        math = re.search(r'<div class="math">(.*?)</div>', html, re.S).group(1)
        assert "```" not in html and "<pre><code>" in math, name
    browser.window(1280, 2000)
    shot = tmp_path / "report.png"
    shot.write_bytes(browser.screenshot())
    assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 20_000
    print(f"screenshot: {shot}")


def test_show_re_renders_a_saved_result(tmp_path):
    out = tmp_path / "r.json"
    first = invoke("jacobian", "--json", str(out))
    shown = invoke("show", str(out))
    assert shown.exit_code == 0
    tables = first.output[:first.output.index("wrote")]
    assert tables.strip() == shown.output.strip()


@pytest.mark.parametrize(("content", "fragment"), [
    ("{not json", "is not valid JSON"),
    ("[1, 2]", "the top level is not an object"),
    ('{"lesson": "x"}', "'title' is missing"),
    (None, "does not exist"),
])
def test_show_rejects_bad_files(tmp_path, content, fragment):
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    assert_one_line_error(invoke("show", str(path)), fragment)


def test_show_rejects_a_malformed_table(tmp_path):
    out = tmp_path / "r.json"
    invoke("jacobian", "--json", str(out))
    data = json.loads(out.read_text())
    data["tables"][0]["rows"][0].append(1)
    out.write_text(json.dumps(data))
    assert_one_line_error(invoke("show", str(out)), "is malformed")
