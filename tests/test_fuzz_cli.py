"""Property-based fuzzing of the command line: random values (huge, tiny, negative, NaN, inf, malformed lists)
for every option of every lesson, on small budgets. Whatever the value: exit code 0, 1 or 2 only, never a
traceback, and a refused run (exit 2) leaves no file behind."""

import os
import stat
from pathlib import Path

import click
import pytest
from conftest import invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradlab.cli import cli
from gradlab.lessons import LESSONS

# Small budgets, so that every value the fuzzer does not touch keeps a run under a second or two.
BASE = {
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
# Options about where output goes or where data lives: fuzzed by their own tests (test_output_files.py).
SKIP = {"json_path", "plot_path", "config", "data_dir", "quiet", "explain", "device", "dataset", "offline"}
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
        if param.name in BUDGETS:
            return st.one_of(st.integers(-(2**70), 3).map(str), nasty_text)
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

    @settings(max_examples=12 if name in ("dqn", "actor-critic") else 25, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(data=st.data())
    def check(data):
        option = data.draw(st.sampled_from(options), label="option")
        value = data.draw(values(option), label=option.opts[0])
        folder = tmp_path_factory.mktemp("fuzz")
        to_device = data.draw(st.booleans(), label="--json /dev/null")
        out = Path("/dev/null") if to_device else folder / "r.json"
        result = invoke(name, *BASE[name], option.opts[0], value, "--json", str(out))
        assert stat.S_ISCHR(os.stat("/dev/null").st_mode)  # a device is written in place, never replaced
        assert result.exit_code in (0, 1, 2), (result.exit_code, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        assert "Traceback" not in result.output
        assert len(result.stderr.strip().splitlines()) == (1 if result.exit_code == 2 else 0), result.stderr
        if not to_device:
            assert out.exists() is (result.exit_code != 2)  # a refused run leaves no file

    check()
