"""Option fields: the vocabulary in which every setting is declared once. A lesson's settings are the fields of its
Config (a LessonConfig), each with its help text and how it is spelled on the command line; the options every lesson
shares are the fields of RunOptions. From these declarations come the click command of each lesson
(gradlab.cli.options builds it), the keyword arguments of `gradlab.run`, the keys a `--config` preset may hold and
the options column of `gradlab list`; gradlab.runner.resolve is the one path from what a user gave to a run. A Spec
knows what a value of its option must be (its kind, choices, range, kind of path) and checks it in one place,
Spec.convert, in plain Python: click's types hand it the flags they parsed, gradlab.runner the values that never pass
through click (gradlab.run's keywords, a preset's).

    hidden: int = option(64, "Units in each hidden layer.")

is one option: `--hidden INTEGER` with that help and default, `hidden=` in gradlab.run, `hidden = 64` in a preset.
A number's bounds are declared with it, `lr: float = option(0.01, "...", bounds=positive())`, and checked in
LessonConfig.__post_init__ (check_bounds); what else a value must satisfy (one option against another, a list's
length) is checked in the lesson's Config.__post_init__ after it. Both raise OptionError (gradlab.errors) naming the
field, so that each front end words it in its own terms (--lr, or lr=); the limits several lessons share (FLOAT32_MAX,
ADAM_MAX_LR, MAX_ENV_STEPS) sit next to the options they limit.

This module imports neither torch nor click: `gradlab --help` reads it.
"""

from __future__ import annotations

import dataclasses
import math
import os
import stat
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gradlab.errors import OptionError
from gradlab.kit.device import DEVICES

DATASETS = ("auto", "mnist", "mnist-sample", "fashion-mnist")  # what --dataset offers; gradlab.kit.data loads each


@dataclass(frozen=True)
class Bounds:
    """Where a number must lie: above LOW and below HIGH (None: no bound on that side), each bound included unless
    it is open. NaN lies nowhere. Declared with between(), at_least(), within(), positive() below."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def holds(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            return False
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return above and below

    def problem(self, value: Any) -> str:
        """What is wrong with VALUE, said after the option's name: "must be at least 1, got 0"."""
        got = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else repr(value)
        low, high = self.low, self.high
        if low == 0 and self.low_open and (high is None or high > 1e30):  # positive(): a step size, a cap, up
            # to what float32 (or Adam's first step in float32) can hold
            most = f" (at most {high:.3g} here)" if high is not None and math.isfinite(high) else ""
            return f"must be a positive finite number, got {got}{most}"
        if high == math.inf:
            return f"must be ≥ {low:g} and finite, got {got}"
        if low is not None and high is not None:
            if isinstance(low, float) or isinstance(high, float):
                return f"must be in {'(['[not self.low_open]}{low:g}, {high:g}{')]'[not self.high_open]}, got {got}"
            return f"must be between {low:,} and {high:,}, got {got}"
        if low is not None:
            return f"must be {'more than' if self.low_open else 'at least'} {low:,}, got {got}"
        return f"must be {'less than' if self.high_open else 'at most'} {high:,}, got {got}"


def between(low: int, high: int) -> Bounds:
    """A whole number from LOW to HIGH, both included."""
    return Bounds(low, high)


def at_least(low: float) -> Bounds:
    return Bounds(low)


def within(low: float, high: float) -> Bounds:
    """A number in [LOW, HIGH] (γ in [0, 1])."""
    return Bounds(float(low), float(high))


def positive(largest: float | None = None) -> Bounds:
    """A number above 0 and no larger than LARGEST: by default the largest float32 (so no inf, NaN or 1e39: the
    lessons compute in float32); math.inf: any finite number."""
    largest = FLOAT32_MAX if largest is None else largest
    return Bounds(0, largest, low_open=True, high_open=largest == math.inf)


def nonnegative() -> Bounds:
    """A finite number ≥ 0 (a weight that may be switched off)."""
    return Bounds(0, math.inf, high_open=True)


@dataclass(frozen=True)
class Opt:
    """How one field is offered to the user (kept in the field's metadata by option())."""

    help: str
    flag: str | None = None  # as click declares it: "--json", "--shuffle/--no-shuffle"; default --field-name
    choices: tuple[str, ...] = ()  # the values a text option may take
    # several flags that set this one field to different values: (("--manual-grad", "manual", help), ...)
    flags: tuple[tuple[str, Any, str], ...] = ()
    value: Any = None  # a lone flag that sets something other than True: --no-target-net sets target_net False;
    # on a text option, what the flag alone gives (--explain is --explain short)
    path: str | None = None  # "file" or "folder": a path of that kind
    range: tuple[int, int] | None = None  # a whole number's bounds, checked by click (--seed)
    bounds: Bounds | None = None  # a number's bounds, checked by the Config (check_bounds): --lr > 0, --gamma in [0, 1]
    envvar: str | None = None  # an environment variable that gives a text option's value when the flag is absent
    listed: bool | str = False  # one of the lesson's main options, shown by `gradlab list` ("choices": with them)
    data: bool = False  # only on the lessons that train on images (--dataset, --data-dir, --offline)
    in_file: bool = True  # may be a key of a --config TOML file
    in_api: bool = True  # may be a keyword argument of gradlab.run
    recorded: bool | str = True  # written to the result's "config" (under this key, when a string)


def option(default: Any, help: str, **how: Any) -> Any:
    """A dataclass field that is also a command-line option (see Opt for HOW)."""
    return field(default=default, metadata={"option": Opt(help, **how)})


def fixed(default: Any, bounds: Bounds) -> Any:
    """A Config field that is not a command-line option (the network's width), with its bounds: Config(...) takes
    it, and check_bounds checks it."""
    return field(default=default, metadata={"bounds": bounds})


def check_bounds(config: Any) -> None:
    """Each field of CONFIG (a dataclass) within its declared bounds, in declaration order; OptionError names the
    first that is not, with its default as a value to try."""
    for f in dataclasses.fields(config):
        opt = f.metadata.get("option")
        bounds = opt.bounds if opt else f.metadata.get("bounds")
        value = getattr(config, f.name)
        if bounds is not None and not bounds.holds(value):
            raise OptionError(f.name, bounds.problem(value), example=f.default)


def flag_group(default: str, *flags: tuple[str, str, str], listed: bool | str = False) -> Any:
    """A field set by one of several flags, each (flag, value, help): --compare / --optimizer / --manual-grad ...
    The user gives at most one of them (two are an error, see cli.LessonCommand)."""
    return field(default=default, metadata={"option": Opt("", flags=flags, listed=listed)})


@dataclass(frozen=True)
class Spec:
    """One option of a command: the field's name, type, default and how it is offered."""

    name: str
    type: Any
    default: Any
    opt: Opt

    @property
    def flag_names(self) -> list[str]:
        """Every flag that sets this option, e.g. ["--shuffle", "--no-shuffle"]."""
        if self.opt.flags:
            return [f for f, _, _ in self.opt.flags]
        return (self.opt.flag or "--" + self.name.replace("_", "-")).split("/")

    @property
    def kind(self) -> str:
        """What a value must be, in words: a whole number, a number, true or false, or text (strings, choices,
        paths and the values of a flag group)."""
        base = next((t for t in typing.get_args(self.type) if t is not type(None)), self.type)  # int | None → int
        return {bool: "true or false", int: "a whole number", float: "a number"}.get(base, "text")

    def holds(self, value: Any) -> bool:
        """VALUE is of the option's kind, strictly: True is not a number, 1.5 not a whole number, 3 not text."""
        if self.kind == "text":
            return isinstance(value, str)
        if self.kind == "true or false":
            return isinstance(value, bool)
        if isinstance(value, bool):
            return False
        return isinstance(value, int) if self.kind == "a whole number" else isinstance(value, int | float)

    def convert(self, value: Any) -> Any:
        """VALUE (of the option's kind) as the option holds it, a whole number made a float where a number is wanted
        (OverflowError when too large for one), checked against the option's choices, range and kind of path: the
        one check of these, for a flag typed (gradlab.cli.options hands click's parse here), a --config value and
        gradlab.run's keyword arguments. ValueError says what is wrong in the words click uses for its own checks,
        so that every error on the command line reads alike."""
        if self.kind == "a number":
            return float(value)
        if self.opt.choices and value not in self.opt.choices:
            raise ValueError(f"{value!r} is not one of {', '.join(map(repr, self.opt.choices))}.")
        if self.opt.range and not self.opt.range[0] <= value <= self.opt.range[1]:
            raise ValueError(f"{value} is not in the range {self.opt.range[0]}<=x<={self.opt.range[1]}.")
        if self.opt.path:
            _check_path(value, self.opt.path)
        return value

    def from_environment(self) -> str | None:
        """The text of the option's environment variable (GRADLAB_DATA for --data-dir), or None where it is unset or
        empty (click reads an empty variable as none)."""
        return (os.environ.get(self.opt.envvar) or None) if self.opt.envvar else None


def _check_path(path: str, kind: str) -> None:
    """PATH may name what does not exist yet, but not a folder where a file is wanted (KIND "file") nor a file where
    a folder is ("folder")."""
    what = "File" if kind == "file" else "Directory"
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    except ValueError as e:  # a NUL byte, a lone surrogate
        raise ValueError(f"{what} {path!r} cannot name a file here ({e}).") from None
    shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if kind == "folder" and stat.S_ISREG(mode):
        raise ValueError(f"{what} {shown!r} is a file.")
    if kind == "file" and stat.S_ISDIR(mode):
        raise ValueError(f"{what} {shown!r} is a directory.")
    if not os.access(path, os.R_OK):
        raise ValueError(f"{what} {shown!r} is not readable.")


def specs(cls: type) -> list[Spec]:
    """The options CLS (a dataclass) declares, in declaration order."""
    hints = typing.get_type_hints(cls)
    return [Spec(f.name, hints[f.name], f.default, f.metadata["option"]) for f in dataclasses.fields(cls)
            if "option" in f.metadata]


# ---------------------------------------------------------------------------------------------------------------
# What a number may be: the lessons compute in float32.
# ---------------------------------------------------------------------------------------------------------------

FLOAT32_MAX = 3.4028234663852886e38  # the lessons compute in float32: a larger number cannot even be stored



# ---------------------------------------------------------------------------------------------------------------
# What every lesson shares.
# ---------------------------------------------------------------------------------------------------------------

@dataclass
class LessonConfig:
    """The base of every lesson's Config: the seed, and what a lesson may say about itself before it runs."""

    seed: int = option(0, "Random seed; CPU runs repeat bit for bit.", range=(0, 2**32 - 1))

    # Why the lesson runs on the CPU whatever --device says (a GPU would only add transfer latency), or None.
    cpu_only: ClassVar[str | None] = None

    def __post_init__(self) -> None:
        """Every field within its declared bounds; a lesson's Config calls this first, then checks the rest."""
        check_bounds(self)

    def check_launch(self, device: str) -> None:
        """What can be checked before anything runs (ports, GPUs, a launcher's variables): raise GradlabError."""

    def plot_unavailable(self) -> str | None:
        """Why --plot has nothing to draw for these settings (checked before the run), or None."""
        return None

    @classmethod
    def reports_here(cls) -> bool:
        """False in a process that computes but must not print or write files (a torchrun rank other than 0)."""
        return True


@dataclass
class RunOptions:
    """How a lesson runs and where its output goes: the same on every lesson, never part of its Config."""

    device: str = option("auto", "auto: CUDA, then MPS, else the CPU, unless the lesson is faster on the CPU (it says "
                                 "so). An explicit absent device is an error. Env GRADLAB_DEVICE.",
                         choices=DEVICES, envvar="GRADLAB_DEVICE")
    threads: int | None = option(None, "CPU threads for torch (default: 1; more only help large tensors on an idle "
                                       "machine).")
    # --config: a preset (gradlab.presets), by its name or a TOML file's path; the result records it as "config"
    preset: str | None = option(None, "TOML file of option values, or a preset's name (e.g. mnist-quick; `gradlab "
                                      "list` names them); flags given here override it.",
                                flag="--config", path="file", in_file=False, in_api=False, recorded="config")
    json_path: str | None = option(None, "Write the machine-readable result to this file (- for standard output).",
                                   flag="--json", path="file", in_file=False, in_api=False, recorded=False)
    plot_path: str | None = option(None, "Write a PNG of the curves to this file (an SVG if it ends in .svg; - for "
                                         "standard output).",
                                   flag="--plot", path="file", in_file=False, in_api=False, recorded=False)
    graph_path: str | None = option(None, "Draw the backward graph of the lesson's key computation, measured (.html, "
                                          ".svg, or - for a tree in the terminal).",
                                    flag="--graph", path="file", in_file=False, in_api=False, recorded=False)
    quick: bool = option(False, "The small budget `gradlab all --quick` uses (see `gradlab list`); every claim is "
                                "still checked. Options given here or in --config override it.", in_file=False)
    quiet: bool = option(False, "Print nothing; use the exit code (and --json).", in_file=False, in_api=False,
                         recorded=False)
    explain: str | None = option(None, "First print the idea, the math and the lines of code that compute it (read "
                                       "from the code); `--explain full`: all of the explanation and its code.",
                                 choices=("short", "full"), value="short", in_api=False, recorded=False)
    dataset: str = option("auto", "auto: full MNIST when present or downloadable, else the bundled mnist-sample.",
                          choices=DATASETS, data=True)
    data_dir: str | None = option(None, "Where datasets live (default: data/ of the checkout; env GRADLAB_DATA).",
                                  path="folder", envvar="GRADLAB_DATA", data=True)
    offline: bool = option(False, "Never touch the network; use local files only.", data=True)


# ---------------------------------------------------------------------------------------------------------------
# Options that several lessons share, each declared here once; a lesson gives its own default.
# ---------------------------------------------------------------------------------------------------------------

def epochs(default: int, help: str = "Passes over the training images.", **how: Any) -> Any:
    return option(default, help, **{"bounds": at_least(1), **how})


def batch_size(default: int, help: str = "Images per gradient step.", **how: Any) -> Any:
    return option(default, help, **{"bounds": at_least(1), **how})


def train_size() -> Any:
    return option(55000, "N training images: from image 5,000 on for full MNIST and Fashion-MNIST (the tutorial's "
                         "mnist.train), from 0 for the bundled sample; all of them when fewer exist.",
                  bounds=at_least(1))


def test_size() -> Any:
    return option(3000, "First N test images for accuracy.", bounds=at_least(1))


def shuffle() -> Any:
    return option(True, "Reshuffle batches each epoch (seeded), or take them in file order.",
                  flag="--shuffle/--no-shuffle")


# environment steps an RL run may ask for (its --total-steps, dqn's --buffer-size): about half a day on 2 cores
MAX_ENV_STEPS = 100_000_000


def gamma() -> Any:
    return option(0.99, "Discount factor γ in [0, 1].", bounds=within(0, 1))


# Adam's first step is lr / (1 − β1) = 10·lr: a larger lr overflows float32 inside the optimizer.
ADAM_MAX_LR = FLOAT32_MAX * (1 - 0.9)


def adam_lr(default: float) -> Any:
    """Adam's learning rate, positive and at most ADAM_MAX_LR."""
    return option(default, "Adam's learning rate.", bounds=positive(ADAM_MAX_LR))


def anneal_lr(help: str) -> Any:
    return option(True, help, flag="--anneal-lr/--no-anneal-lr")


def eval_every(default: int) -> Any:
    return option(default, "Every N environment steps, score the policy on greedy episodes; keep the best.",
                  bounds=at_least(1))


def checkpoint_episodes() -> Any:
    return option(5, "Greedy episodes that score a checkpoint.", bounds=between(1, 10_000))


def eval_episodes() -> Any:
    return option(10, "Fresh greedy episodes on which the best checkpoint is reported (the claim).",
                  bounds=between(1, 10_000))


def windows() -> Any:
    return fixed(10, between(1, 1000))  # windows of the training table


# ---------------------------------------------------------------------------------------------------------------
# The options of one lesson, in the order its --help lists them.
# ---------------------------------------------------------------------------------------------------------------

def lesson_specs(config: type, needs_data: bool, dataset_default: str = "auto") -> list[Spec]:
    """The lesson's own options, then the seed and the run options (the data ones only where it trains on images,
    with the lesson's default dataset)."""
    base = specs(LessonConfig)
    own = [s for s in specs(config) if s not in base]
    run = [s for s in specs(RunOptions) if needs_data or not s.opt.data]
    run = [dataclasses.replace(s, default=dataset_default) if s.name == "dataset" else s for s in run]
    return [*own, *base, *run]


RUN_NAMES = frozenset(f.name for f in dataclasses.fields(RunOptions))


def split(params: dict[str, Any]) -> tuple[RunOptions, dict[str, Any]]:
    """PARAMS (every option of a lesson) as its RunOptions and the keyword arguments of its Config."""
    run = RunOptions(**{k: v for k, v in params.items() if k in RUN_NAMES})
    return run, {k: v for k, v in params.items() if k not in RUN_NAMES}


def listed(all_specs: list[Spec]) -> str:
    """The main options as `gradlab list` shows them: --epochs --lr, a choice as --clip a|b|c."""
    words = []
    for s in all_specs:
        if not s.opt.listed:
            continue
        if s.opt.flags:
            words += s.flag_names
        elif s.opt.listed == "choices":
            words.append(f"{s.flag_names[0]} {'|'.join(s.opt.choices)}")
        else:
            words.append(s.flag_names[0])
    return " ".join(words)


def as_args(all_specs: list[Spec], values: dict[str, Any]) -> list[str]:
    """VALUES (option → value, e.g. a lesson's quick budget) as the command line spells them:
    {"dataset": "mnist-sample", "offline": True, "epochs": 3} → --dataset mnist-sample --offline --epochs 3."""
    by_name = {s.name: s for s in all_specs}
    args: list[str] = []
    for name, value in values.items():
        s = by_name[name]
        if s.opt.flags:  # the flag that sets this value
            args.append(next(f for f, v, _ in s.opt.flags if v == value))
        elif s.type is bool:  # --x/--no-x; a lone --x sets True (or opt.value: --no-target-net sets False)
            spelled = dict(zip((True, False), s.flag_names, strict=False)) if "/" in (s.opt.flag or "") else \
                {True if s.opt.value is None else s.opt.value: s.flag_names[0]}
            if value not in spelled:
                raise ValueError(f"no flag sets {name}={value!r}")
            args.append(spelled[value])
        else:
            args += [s.flag_names[0], str(value)]
    return args
