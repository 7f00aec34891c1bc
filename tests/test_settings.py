"""Every option is declared once, as a field of a lesson's Config (or of RunOptions), and the command line, the
API, --config files and `gradlab list` follow from it; every lesson keeps the one contract; imports run downward."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import gradlab
from gradlab.cli.main import cli, lesson_command
from gradlab.kit import options
from gradlab.lessons import LESSONS, ORDER, Lesson, LessonInfo

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", list(LESSONS))
def test_every_lesson_keeps_the_contract(name):
    info = LESSONS[name]
    module = info.load()
    assert isinstance(module, Lesson) and module.Config is info.config
    assert issubclass(info.config, options.LessonConfig) and dataclasses.is_dataclass(info.config)
    params = inspect.signature(module.run).parameters
    assert next(iter(params)) == "config" and {"device", "progress"} <= set(params)
    assert ("data" in params) == info.needs_data
    assert all(callable(getattr(module, n)) for n in module.EXPLAIN)


@pytest.mark.parametrize("name", list(LESSONS))
def test_every_lesson_declares_the_facts_the_step_through_and_the_grader_read(name):
    """Its step-through inputs, the lesson functions that answer its exercises, what passes their checks as it is,
    its graded variant: declared in its own folder (LessonInfo has no default for them), about its own exercises."""
    info = LESSONS[name]
    functions = {e.function for e in importlib.import_module(f"{info.package}.exercises").EXERCISES}
    assert set(info.answered_by) <= functions and set(info.passes_check) <= functions, functions
    module = info.load()
    assert all(callable(getattr(module, f)) for f in info.answered_by.values()), info.answered_by
    assert set(info.step_inputs) <= set(inspect.signature(module.graphs).parameters), info.step_inputs
    assert info.graded_variant is None or info.graded_variant.partition(".")[2], info.graded_variant
    required = {f.name for f in dataclasses.fields(LessonInfo) if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING}
    assert {"step_inputs", "answered_by", "passes_check", "graded_variant"} <= required


# Strings that are a lesson's name without meaning the lesson: MNIST the data set (--dataset mnist)
NOT_THE_LESSON = {("gradlab/kit/data.py", "mnist"), ("gradlab/kit/options.py", "mnist")}


def test_nothing_outside_a_lessons_folder_names_it():
    """A lesson's facts live in its folder: no module of gradlab outside gradlab/lessons/<folder>/ holds a lesson's
    name ("dqn") or an exercise's ("dqn.td_loss") as a string, but the registry's one line per lesson (ORDER)."""
    names = set(LESSONS) | {info.package.rpartition(".")[2] for info in LESSONS.values()}
    folders = {ROOT / "gradlab" / "lessons" / info.package.rpartition(".")[2] for info in LESSONS.values()}
    allowed = NOT_THE_LESSON | {("gradlab/lessons/__init__.py", folder) for folder in ORDER}  # the registry
    found = []
    for path in sorted((ROOT / "gradlab").rglob("*.py")):
        if any(folder in path.parents for folder in folders):
            continue
        where = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            text = node.value
            if (text in names or (" " not in text and text.partition(".")[0] in names and text.partition(".")[2])) \
                    and (where, text) not in allowed:
                found.append(f"{where}:{node.lineno} {text!r}")
    assert not found, "a lesson named outside its folder:\n" + "\n".join(found)


@pytest.mark.parametrize("name", list(LESSONS))
def test_each_option_is_a_field_and_the_flags_give_the_fields_defaults(name):
    """What the command line gives when no flag is typed is what Config() holds, for every lesson (the defaults
    live in one place, so they cannot drift apart)."""
    info = LESSONS[name]
    command = cli.commands[name]
    fields = {f.name for f in dataclasses.fields(info.config)} | options.RUN_NAMES
    assert {p.name for p in command.params if isinstance(p, click.Option)} <= fields
    params = command.make_context(name, []).params
    _, values = options.split(params)
    assert info.config(**values) == info.config()
    assert values.keys() == {s.name for s in info.specs} - options.RUN_NAMES


@pytest.mark.parametrize("name", list(LESSONS))
def test_budgets_are_values_and_the_command_lines_shown_for_them_give_them_back(name):
    """A lesson's quick and full budgets are option values (LessonInfo.quick / full); the command line shown for one
    (runtimes.json's quick_cmd, LessonInfo.command) parses back to exactly those values."""
    from click.core import ParameterSource

    from gradlab.runner import budget_values

    info = LESSONS[name]
    for budget in ("quick", "full"):
        values = budget_values(info, budget)
        assert values == getattr(info, budget)
        args = info.args(values)
        assert args[0] == name and info.command(values) == " ".join(["gradlab", *args])
        ctx = cli.commands[name].make_context(name, args[1:])
        assert {k: ctx.params[k] for k in values} == values
        assert all(ctx.get_parameter_source(k) == ParameterSource.COMMANDLINE for k in values)


def test_values_are_spelled_with_the_flags_that_set_them():
    mnist, dqn = LESSONS["mnist"].specs, LESSONS["dqn"].specs
    assert options.as_args(mnist, {"shuffle": False, "variant": "manual", "lr": 0.1, "offline": True}) == \
        ["--no-shuffle", "--manual-grad", "--lr", "0.1", "--offline"]
    assert options.as_args(dqn, {"target_net": False, "compare": True}) == ["--no-target-net", "--compare"]
    with pytest.raises(ValueError, match="no flag sets offline=False"):
        options.as_args(mnist, {"offline": False})


def test_no_option_is_spelled_twice_in_the_sources():
    """Each flag's help text is one string in gradlab/'s code (its declaration), not also a copy kept by hand."""
    strings = [node.value for p in (ROOT / "gradlab").rglob("*.py")
               for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
               if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    for info in LESSONS.values():
        for s in info.specs:
            for text in [s.opt.help] if s.opt.help else [h for _, _, h in s.opt.flags]:
                assert sum(text in t for t in strings) == 1, (info.name, s.name)


def test_a_new_option_is_one_line_and_reaches_the_cli_the_api_and_config_files(tmp_path, monkeypatch):
    from gradlab import api, runner

    @dataclasses.dataclass
    class Config(options.LessonConfig):
        width: int = options.option(3, "Units in the hidden layer.")  # the one line

    info = LessonInfo(name="demo", config=Config, idea="an idea", short_help="A demo.", help="A demo lesson.",
                      step_inputs={}, answered_by={}, passes_check={}, graded_variant=None)
    monkeypatch.setitem(LESSONS, "demo", info)
    command = lesson_command(info)
    out = CliRunner().invoke(command, ["--help"]).output
    assert "--width INTEGER" in out and "Units in the hidden layer.  [default: 3]" in out
    assert api.options("demo")["width"] == 3
    toml = tmp_path / "demo.toml"
    toml.write_text("width = 5\n")
    ctx = command.make_context("demo", ["--config", str(toml)])
    assert runner.resolve("demo", {"preset": ctx.params["preset"]})[1].width == 5
    toml.write_text("width = 1.5\n")
    with pytest.raises(gradlab.errors.GradlabError, match=r"width must be a whole number, got 1\.5"):
        runner.resolve("demo", {"preset": ctx.params["preset"]})


def test_the_settings_and_the_command_line_import_no_torch():
    code = ("import sys, gradlab.cli.main, gradlab.api\n"
            "from gradlab.lessons import LESSONS\n"
            "[i.specs for i in LESSONS.values()]\n"
            "gradlab.cli.main.cli.commands['ddp'].get_help(gradlab.cli.main.cli.make_context('gradlab', ['ddp']))\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'rich', 'numpy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout.replace("'", '"')) == []


def test_a_numbers_bounds_are_one_line_of_its_declaration_worded_by_each_front_end():
    """options.Bounds: closed and open ends; NaN, inf (unless a bound is inf, open) and True lie outside; the
    command line says --gamma and try, gradlab.run gamma and e.g.; a field that is no option (dqn's hidden) too."""
    import math

    from gradlab import runner
    from gradlab.errors import GradlabError
    from gradlab.lessons.dqn.settings import Config

    unit, lr = options.within(0, 1), options.positive()
    assert unit.holds(0.0) and unit.holds(1) and not unit.holds(1.5) and not unit.holds(math.nan)
    assert not unit.holds(True) and not unit.holds("0.5")
    assert lr.holds(1e-30) and lr.holds(options.FLOAT32_MAX) and not lr.holds(0.0) and not lr.holds(1e39)
    assert options.positive(math.inf).holds(1e300) and not options.positive(math.inf).holds(math.inf)
    assert options.nonnegative().holds(0) and not options.nonnegative().holds(math.inf)
    assert options.Bounds(0.0, 1.0, low_open=True, high_open=True).problem(1.0) == "must be in (0, 1), got 1.0"
    assert options.between(1, 1024).problem(2048) == "must be between 1 and 1,024, got 2,048"
    with pytest.raises(GradlabError, match=r"^--gamma must be in \[0, 1\], got 2.0; try --gamma 0.99$"):
        runner.resolve("dqn", {"gamma": 2.0})
    with pytest.raises(GradlabError, match=r"^gradlab.run\('dqn'\): gamma must be in \[0, 1\], got 2.0; e.g. "
                                           r"gamma=0.99$"):
        runner.resolve("dqn", {"gamma": 2}, python=True)
    with pytest.raises(GradlabError, match="--hidden must be between 1 and 4,096, got 0; try --hidden 128"):
        Config(hidden=0)


def test_a_flags_choices_range_and_path_are_checked_by_its_spec(monkeypatch):
    """One check for choices, ranges and paths: click hands a flag typed to Spec.convert, as gradlab.runner hands it
    a --config value and gradlab.run's keyword arguments (click keeps only what it shows: metavar, range, help)."""
    def refuse(self, value):
        raise ValueError(f"{value!r} refused by the Spec")

    monkeypatch.setattr(options.Spec, "convert", refuse)
    for args, said in ((["log1pexp", "--dtype", "float32"], "'--dtype': 'float32' refused by the Spec"),
                       (["log1pexp", "--seed", "3"], "'--seed': 3 refused by the Spec"),
                       (["log1pexp", "--json", "x.json"], "'--json': 'x.json' refused by the Spec")):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2 and said in result.output, result.output


def test_the_runner_and_the_library_need_no_click():
    """click is the command line's: gradlab.run, gradlab.options and the runner check values with the Specs."""
    code = ("import sys, gradlab\nfrom gradlab import runner\ngradlab.options('mnist')\n"
            "runner.resolve('mnist', {'epochs': 2, 'lr': 0.1}, python=True)\n"
            "runner.resolve('clip', {}, budget='quick')\nprint('click' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout == "False\n", out.stderr


def _imports() -> dict[str, set[str]]:
    """gradlab's modules and the gradlab modules each imports, at the top or inside a function."""
    mods = {}
    for p in (ROOT / "gradlab").rglob("*.py"):
        parts = p.relative_to(ROOT).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p

    def module_of(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for m, p in mods.items():
        found = set()
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {module_of(a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                subs = {module_of(f"{node.module}.{a.name}") for a in node.names}
                found |= {s for s in subs if s != module_of(node.module)} or {module_of(node.module)}
        graph[m] = {f for f in found if f and f.startswith("gradlab") and f != m}
    return graph


def test_imports_run_downward():
    graph = _imports()
    assert "gradlab.cli" not in graph["gradlab.api"]  # the library is not built on the command line
    assert not {g for g in graph["gradlab.kit.result"] if g.startswith("gradlab.report")}
    # no circle: a depth-first walk never meets a module that is still open
    state: dict[str, int] = {}

    def walk(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph.get(m, ())):
            assert state.get(n) != 1, " -> ".join([*path, m, n])
            if n not in state:
                walk(n, [*path, m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            walk(m, [])


# The wings, from the ground up (docs/develop/architecture.md): a module imports its own wing or a lower one.
# The grader's wing (gradlab/practice/) is four rooms over its registry: the classroom (a class, a course, the files
# it writes) -> judging (a submission, the check, the judge, the diagnosis) -> the sandbox (isolation, cgroups, the
# process) -> inside (what runs in the sandbox: the only folder of practice/ bound into it).
FLOORS = [("gradlab.errors", "gradlab.version", "gradlab.assets", "gradlab.ascii"), ("gradlab.kit",),
          ("gradlab.lessons",), ("gradlab.report", "gradlab.presets"), ("gradlab.practice",),
          ("gradlab.practice.inside",), ("gradlab.practice.sandbox",), ("gradlab.practice.judging",),
          ("gradlab.practice.classroom", "gradlab.runner"), ("gradlab.api",), ("gradlab.cli",),
          ("gradlab", "gradlab.__main__")]
ROOMS = ("gradlab.practice.classroom", "gradlab.practice.judging", "gradlab.practice.sandbox",
         "gradlab.practice.inside")


def _wing(module: str) -> tuple[int, str]:
    """(floor, wing) of MODULE: the longest wing name it falls under."""
    found = [(len(w), floor, w) for floor, wings in enumerate(FLOORS) for w in wings
             if module == w or (w != "gradlab" and module.startswith(w + "."))]
    _, floor, wing = max(found)
    return floor, wing


def test_the_stairs_run_one_way():
    """cli → runner, api, practice → report → lessons → kit → the ground floor: no import runs back up, a lesson
    imports no other lesson, and only gradlab/cli/ imports click."""
    up = []
    for m, targets in _imports().items():
        floor, wing = _wing(m)
        for t in targets:
            t_floor, t_wing = _wing(t)
            if t_wing != wing and t_floor >= floor:
                up.append(f"{m} -> {t}")
            lesson, other = m.split(".")[2:3], t.split(".")[2:3]
            if wing == t_wing == "gradlab.lessons" and lesson and other and lesson != other and "info" not in other:
                up.append(f"{m} -> {t} (a lesson imports another)")
    assert not up, "\n".join(sorted(up))
    clicky = []
    for p in (ROOT / "gradlab").rglob("*.py"):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        if any(n == "click" or n.startswith("click.") for n in names) and p.parent.name != "cli":
            clicky.append(str(p.relative_to(ROOT)))
    assert not clicky, clicky


def _floors(graph: dict[str, set[str]], room: str) -> dict[str, int]:
    """Each module of ROOM's floor inside it: 1 for one that imports nothing of ROOM's, else one above the highest it
    imports."""
    inner = {m: {t for t in ts if t.startswith(room + ".")} for m, ts in graph.items() if m.startswith(room + ".")}
    floor: dict[str, int] = {}

    def of(m: str) -> int:
        if m not in floor:
            floor[m] = 1 + max((of(t) for t in inner.get(m, ()) if t in inner), default=0)
        return floor[m]

    for m in inner:
        of(m)
    return floor


def test_each_room_of_the_grader_has_at_most_four_floors():
    graph = _imports()
    for room in ROOMS:
        floors = _floors(graph, room)
        assert floors, room
        assert max(floors.values()) <= 4, (room, sorted(floors.items(), key=lambda kv: -kv[1]))


def test_the_sandbox_binds_one_folder_of_the_grader():
    """What enters the sandbox from gradlab/practice/ is the inside room, and the inside room imports nothing of the
    grader's: the security boundary is a folder."""
    from gradlab.practice.sandbox import files

    grader = {m for m in files.ALWAYS if m.startswith("gradlab.practice")}
    assert grader and all(m.startswith("gradlab.practice.inside.") for m in grader)
    inside = {p.stem for p in (ROOT / "gradlab" / "practice" / "inside").glob("*.py") if p.stem != "__init__"}
    assert {m.rsplit(".", 1)[1] for m in grader} == inside
    graph = _imports()
    leaks = {f"{m} -> {t}" for m, ts in graph.items() if m.startswith("gradlab.practice.inside")
             for t in ts if t.startswith("gradlab.practice") and not t.startswith("gradlab.practice.inside")}
    assert not leaks, leaks


def test_gradlab_lessons_is_the_subpackage_and_list_lessons_the_function():
    code = ("import gradlab\nassert gradlab.list_lessons()[0]['name'] == 'mnist'\n"
            "from gradlab.lessons import LESSONS\nassert gradlab.lessons is sys.modules['gradlab.lessons']\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", "import sys\n" + code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "ok", out.stderr


def test_same_results_script_sees_a_changed_number(tmp_path):
    """scripts/same_results.py (the refactoring guard): what is measured in seconds aside, any changed number is a
    difference."""
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir(), after.mkdir()

    def result(samples_per_s: float, wall_s: float, weight: float, port: int) -> str:
        return json.dumps({"claims": [{"id": "a", "value": 1e-7}], "metrics": {"wall_s": wall_s, "pid": port},
                           "tables": [{"title": f"rendezvous 127.0.0.1:{port}", "columns": ["run", "samples/s", "w"],
                                       "rows": [["ddp", samples_per_s, weight]]}]})

    (before / "x-quick.json").write_text(result(100.0, 1.0, 0.5, 5000))
    (after / "x-quick.json").write_text(result(900.0, 2.0, 0.5, 6000))
    script = [sys.executable, str(ROOT / "scripts" / "same_results.py"), "compare", str(before), str(after)]
    assert subprocess.run(script, capture_output=True).returncode == 0  # only times, a pid and a port differ
    (after / "x-quick.json").write_text(result(900.0, 2.0, 0.5000001, 6000))
    out = subprocess.run(script, capture_output=True, text=True)
    assert out.returncode == 1 and "/tables/0/rows/0/1: 0.5 became 0.5000001" in out.stdout
