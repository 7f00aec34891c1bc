"""Property-based fuzzing of the command line: random values (huge, tiny, negative, NaN, inf, malformed lists)
for up to three options of a lesson at once, on small budgets. Whatever the values: exit code 0, 1 or 2 only, never
a traceback, and a refused run (exit 2) leaves no file behind. Fresh examples on every run (not derandomized); a
failure prints the falsifying example and a @reproduce_failure blob, and hypothesis keeps it in .hypothesis/ for the
next run. Also `gradlab show` on mutated result files."""

import copy
import json
import os
import stat
from pathlib import Path

import click
import pytest
from conftest import invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradlab.cli.main import cli
from gradlab.lessons import LESSONS

# Small budgets, so that every value the fuzzer does not touch keeps a run under a second or two (a lesson not named
# here runs its --quick budget).
SMALL = {
    "mnist": ["--dataset", "mnist-sample", "--offline", "--epochs", "1", "--train-size", "500", "--test-size", "100"],
    "clip": ["--dataset", "mnist-sample", "--offline", "--epochs", "1", "--train-size", "500", "--test-size", "100"],
    "jacobian": [],
    "log1pexp": ["--x", "0,100"],
    "gaussian-policy": ["--epochs", "3", "--samples", "4"],
    "dqn": ["--total-steps", "300", "--learning-starts", "100", "--train-every", "50", "--gradient-steps", "2",
            "--eval-episodes", "1", "--eval-every", "150", "--checkpoint-episodes", "1", "--buffer-size", "500"],
    "actor-critic": ["--total-steps", "200", "--envs", "2", "--eval-episodes", "1", "--eval-every", "100",
                     "--checkpoint-episodes", "1"],
    "ddp": ["--workers", "1", "--steps", "2", "--batch-size", "20", "--micro-batches", "2"],
}
BASE = {name: SMALL.get(name, ["--quick"]) for name in LESSONS}
# Options about where output goes or where data lives: fuzzed by their own tests (test_output_files.py).
SKIP = {"json_path", "plot_path", "graph_path", "config", "data_dir", "quiet", "explain", "device", "dataset",
        "offline"}
# Budgets: a huge valid value would only make the run long, so they get invalid or small values.
BUDGETS = {"epochs", "total_steps", "train_size", "test_size", "samples", "repeats", "buffer_size", "envs",
           "eval_episodes", "checkpoint_episodes", "gradient_steps", "batch_size", "hidden", "threads", "steps",
           "workers"}

nasty_text = st.sampled_from(["", "abc", "nan", "inf", "-inf", "1e400", "1e-400", "-0", "1,", ",", ";", ";;", "1;2",
                              "0,0", "1e308,1e308", "nan,1", "1,2,3,4,5,6,7,8,9", " ", "0x10", "1_000"])
huge_or_tiny = st.sampled_from(["1e38", "1e39", "3.5e38", "1e-45", "-1e-45", "1e308", "5e-324", "-1e308"])


def values(param: click.Parameter):
    if isinstance(param.type, click.Choice):
        return st.one_of(st.sampled_from(list(param.type.choices)), nasty_text)
    if isinstance(param.type, click.types.IntParamType):
        if param.name == "batch_size":  # a batch of 1 on 500 images makes a slow run, not a new case: 20 or 50
            return st.one_of(st.integers(-(2**70), 0).map(str), st.sampled_from(["20", "50"]), nasty_text)
        if param.name in BUDGETS:  # "1_000" is a valid 1000 to Python's int(): a long run, not a new case
            return st.one_of(st.integers(-(2**70), 3).map(str), nasty_text.filter(lambda s: s != "1_000"))
        return st.one_of(st.integers(-(2**70), 2**70).map(str), nasty_text)
    if isinstance(param.type, click.types.FloatParamType):
        return st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), huge_or_tiny, nasty_text)
    numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32).map(repr), huge_or_tiny)
    return st.one_of(nasty_text, st.lists(numbers, min_size=1, max_size=5).map(",".join),
                     st.lists(st.lists(numbers, min_size=1, max_size=4).map(",".join), min_size=1, max_size=4)
                     .map(";".join))


def fuzzable(name: str) -> list[click.Option]:
    return [p for p in cli.commands[name].params
            if isinstance(p, click.Option) and not p.is_flag and p.name not in SKIP]


@pytest.mark.parametrize("name", list(LESSONS))
def test_any_option_value_gives_0_1_or_2_and_never_a_traceback(name, tmp_path_factory):
    options = fuzzable(name)

    @settings(max_examples=12 if name in ("dqn", "actor-critic") else 25, deadline=None, print_blob=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(data=st.data())
    def check(data):
        chosen = data.draw(st.lists(st.sampled_from(options), min_size=1, max_size=3, unique_by=lambda p: p.name),
                           label="options")
        args = [a for option in chosen for a in (option.opts[0], data.draw(values(option), label=option.opts[0]))]
        folder = tmp_path_factory.mktemp("fuzz")
        to_device = data.draw(st.booleans(), label="--json /dev/null")
        out = Path("/dev/null") if to_device else folder / "r.json"
        result = invoke(name, *BASE[name], *args, "--json", str(out))
        assert stat.S_ISCHR(os.stat("/dev/null").st_mode)  # a device is written in place, never replaced
        assert result.exit_code in (0, 1, 2), (result.exit_code, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        assert "Traceback" not in result.output
        assert len(result.stderr.strip().splitlines()) == (1 if result.exit_code == 2 else 0), result.stderr
        if not to_device:
            assert out.exists() is (result.exit_code != 2)  # a refused run leaves no file

    check()


# ------------------------------------------------------------------------------------------ gradlab show
json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(),
                                     st.text(max_size=12), st.sampled_from(["nan", "inf", "[/x]", "[bold]", ",d"])),
                           lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                           max_leaves=8)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("show") / "r.json"
    assert invoke("jacobian", "--json", str(path)).exit_code == 0
    return json.loads(path.read_text())


def paths(value, prefix=()):
    """Every place in a JSON value: the path of keys and indices that leads to it."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, (*prefix, i))


@settings(max_examples=120, deadline=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_show_on_any_mutation_of_a_result_gives_0_1_or_2_and_never_a_traceback(saved, tmp_path_factory, data):
    """A result from a future version, a hand-edited file, markup in a title: show renders it or refuses it in one
    line, and its exit code agrees with the claims it prints."""
    mutated = copy.deepcopy(saved)
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        where = data.draw(st.sampled_from(list(paths(mutated))[1:]), label="path")
        parent = mutated
        for key in where[:-1]:
            parent = parent[key]
        how = data.draw(st.sampled_from(["replace", "delete", "add key"]), label="how")
        if how == "delete":
            del parent[where[-1]]
        elif how == "add key" and isinstance(parent, dict):
            parent[data.draw(st.text(max_size=6), label="new key")] = data.draw(json_values, label="new value")
        else:
            parent[where[-1]] = data.draw(json_values, label="value")
    path = tmp_path_factory.mktemp("m") / "r.json"
    path.write_text(json.dumps(mutated))
    result = invoke("show", str(path))
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == (1 if result.exit_code == 2 else 0), result.stderr
    if result.exit_code != 2:  # the printed verdict and the exit code agree
        said = ("claims failed", "not reached", "stopped:")
        assert any(s in result.output for s in said) == (result.exit_code == 1)


def test_show_refuses_deep_nesting_in_one_line(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    result = invoke("show", str(path))
    assert result.exit_code == 2 and "nests too deeply" in result.stderr
