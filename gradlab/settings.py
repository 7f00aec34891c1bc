"""Settings, declared once: a lesson's settings are the fields of its Config, each with its help text and how it is
spelled on the command line; the options every lesson shares are the fields of RunOptions. From these
declarations come the click command of each lesson (cli.py), the keyword arguments of `gradlab.run` (api.py), the
keys a `--config` TOML file may hold (config.py) and the options column of `gradlab list`.

    hidden: int = option(64, "Units in each hidden layer.")

is one option: `--hidden INTEGER` with that help and default, `hidden=` in gradlab.run, `hidden = 64` in a preset.
What a value must satisfy beyond its type is checked once, in the Config's __post_init__.

This module imports neither torch nor click at start-up: `gradlab --help` reads it.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gradlab.device import DEVICES

DATASETS = ("auto", "mnist", "mnist-sample", "fashion-mnist")  # what --dataset offers; gradlab.data loads each


@dataclass(frozen=True)
class Opt:
    """How one field is offered to the user (kept in the field's metadata by option())."""

    help: str
    flag: str | None = None  # as click declares it: "--json", "--shuffle/--no-shuffle"; default --field-name
    choices: tuple[str, ...] = ()  # the values a text option may take
    # several flags that set this one field to different values: (("--manual-grad", "manual", help), ...)
    flags: tuple[tuple[str, Any, str], ...] = ()
    value: Any = None  # a lone flag that sets something other than True: --no-target-net sets target_net False
    path: str | None = None  # "file" or "folder": a path of that kind
    range: tuple[int, int] | None = None  # a whole number's bounds, checked by click (--seed)
    envvar: str | None = None  # an environment variable that gives the value when the flag is absent
    listed: bool | str = False  # one of the lesson's main options, shown by `gradlab list` ("choices": with them)
    data: bool = False  # only on the lessons that train on images (--dataset, --data-dir, --offline)
    in_file: bool = True  # may be a key of a --config TOML file
    in_api: bool = True  # may be a keyword argument of gradlab.run
    recorded: bool = True  # written to the result's "config"


def option(default: Any, help: str, **how: Any) -> Any:
    """A dataclass field that is also a command-line option (see Opt for HOW)."""
    return field(default=default, metadata={"option": Opt(help, **how)})


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


def specs(cls: type) -> list[Spec]:
    """The options CLS (a dataclass) declares, in declaration order."""
    hints = typing.get_type_hints(cls)
    return [Spec(f.name, hints[f.name], f.default, f.metadata["option"]) for f in dataclasses.fields(cls)
            if "option" in f.metadata]


# ---------------------------------------------------------------------------------------------------------------
# What every lesson shares.
# ---------------------------------------------------------------------------------------------------------------

@dataclass
class LessonConfig:
    """The base of every lesson's Config: the seed, and what a lesson may say about itself before it runs."""

    seed: int = option(0, "Random seed; CPU runs repeat bit for bit.", range=(0, 2**32 - 1))

    # Why the lesson runs on the CPU whatever --device says (a GPU would only add transfer latency), or None.
    cpu_only: ClassVar[str | None] = None

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

    device: str = option("auto", "auto: CUDA, then MPS, else the CPU. An explicit absent device is an error.",
                         choices=DEVICES)
    threads: int | None = option(None, "CPU threads for torch (default: 1; more only help large tensors on an idle "
                                       "machine).")
    config: str | None = option(None, "TOML file of option values, or a preset's name (e.g. mnist-quick; `gradlab "
                                      "list` names them); flags given here override it.",
                                path="file", in_file=False, in_api=False)
    json_path: str | None = option(None, "Write the machine-readable result to this file (- for standard output).",
                                   flag="--json", path="file", in_file=False, in_api=False, recorded=False)
    plot_path: str | None = option(None, "Write a PNG of the curves to this file (- for standard output).",
                                   flag="--plot", path="file", in_file=False, in_api=False, recorded=False)
    quick: bool = option(False, "The small budget `gradlab all --quick` uses (see `gradlab list`); every claim is "
                                "still checked. Options given here or in --config override it.", in_file=False)
    quiet: bool = option(False, "Print nothing; use the exit code (and --json).", in_file=False, in_api=False,
                         recorded=False)
    explain: bool = option(False, "First print the math and the source lines that implement it (read from the "
                                  "code).", in_api=False, recorded=False)
    dataset: str = option("auto", "auto: full MNIST when present or downloadable, else the bundled mnist-sample.",
                          choices=DATASETS, data=True)
    data_dir: str | None = option(None, "Where datasets live (default: data/ of the checkout; env GRADLAB_DATA).",
                                  path="folder", envvar="GRADLAB_DATA", data=True)
    offline: bool = option(False, "Never touch the network; use local files only.", data=True)


# ---------------------------------------------------------------------------------------------------------------
# Options that several lessons share, each declared here once; a lesson gives its own default.
# ---------------------------------------------------------------------------------------------------------------

def epochs(default: int, help: str = "Passes over the training images.", **how: Any) -> Any:
    return option(default, help, **how)


def batch_size(default: int, help: str = "Images per gradient step.") -> Any:
    return option(default, help)


def train_size() -> Any:
    return option(55000, "N training images: from image 5,000 on for full MNIST and Fashion-MNIST (the tutorial's "
                         "mnist.train), from 0 for the bundled sample; all of them when fewer exist.")


def test_size() -> Any:
    return option(3000, "First N test images for accuracy.")


def shuffle() -> Any:
    return option(True, "Reshuffle batches each epoch (seeded), or take them in file order.",
                  flag="--shuffle/--no-shuffle")


def gamma() -> Any:
    return option(0.99, "Discount factor γ in [0, 1].")


def adam_lr(default: float) -> Any:
    return option(default, "Adam's learning rate.")


def anneal_lr(help: str) -> Any:
    return option(True, help, flag="--anneal-lr/--no-anneal-lr")


def eval_every(default: int) -> Any:
    return option(default, "Every N environment steps, score the policy on greedy episodes; keep the best.")


def checkpoint_episodes() -> Any:
    return option(5, "Greedy episodes that score a checkpoint.")


def eval_episodes() -> Any:
    return option(10, "Fresh greedy episodes on which the best checkpoint is reported (the claim).")


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


def silenced(params: dict[str, Any]) -> dict[str, Any]:
    """PARAMS for a process that computes but neither prints nor writes (a torchrun rank other than 0): every
    option about output (those not recorded in the result: --json, --plot, --explain) off, and --quiet."""
    off = {s.name: s.default for s in specs(RunOptions) if not s.opt.recorded}
    return {**params, **off, "quiet": True}


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


# ---------------------------------------------------------------------------------------------------------------
# click, built from the specs (imported only when a command is built).
# ---------------------------------------------------------------------------------------------------------------

def parse(all_specs: list[Spec], args: list[str] | tuple[str, ...]) -> tuple[dict[str, Any], set[str]]:
    """ARGS as the command of SPECS parses them: (every option's value, the names that ARGS gave)."""
    import click
    from click.core import ParameterSource

    ctx = click.Command("gradlab", params=click_params(all_specs)).make_context("gradlab", list(args))
    return ctx.params, {k for k in ctx.params if ctx.get_parameter_source(k) == ParameterSource.COMMANDLINE}


def click_params(all_specs: list[Spec]) -> list:
    """The click options of SPECS, in order; a flag group gives one option per flag."""
    import click

    params = []
    for s in all_specs:
        o = s.opt
        if o.flags:
            for flag, value, text in o.flags:
                extra = {"default": True} if value == s.default else {}
                params.append(click.Option([flag, s.name], flag_value=value, help=text, **extra))
            continue
        decl = [o.flag or "--" + s.name.replace("_", "-"), s.name]
        if s.type is bool:
            if "/" in decl[0]:
                params.append(click.Option(decl, default=s.default, show_default=True, help=o.help))
            elif o.value is not None:
                params.append(click.Option(decl, flag_value=o.value, default=s.default, help=o.help))
            else:
                params.append(click.Option(decl, is_flag=True, help=o.help))
            continue
        params.append(click.Option(decl, type=_click_type(s), default=s.default, envvar=o.envvar,
                                   show_default=s.default not in (None, ""), help=o.help))
    return params


def _click_type(s: Spec):
    import click

    if s.opt.choices:
        return click.Choice(s.opt.choices)
    if s.opt.path:
        return click.Path(dir_okay=False) if s.opt.path == "file" else click.Path(file_okay=False)
    if s.opt.range:
        return click.IntRange(*s.opt.range)
    base = next((t for t in typing.get_args(s.type) if t is not type(None)), s.type)  # int | None → int
    return {int: click.INT, float: click.FLOAT}.get(base, click.STRING)
