"""What a lesson is, for the registry: its entry (LessonInfo, named fields) and the contract its lesson module keeps
(Lesson). Torch-free: `gradlab --help`, `gradlab list` and every lesson's `--help` read it.

A lesson is a folder, gradlab/lessons/<package>/:

    __init__.py     INFO = LessonInfo(name=..., config=Config, idea=..., ...): its entry in the registry
    settings.py     Config: its settings, each field an option (gradlab.kit.options), checked in
                    __post_init__; torch-free, since --help reads it
    lesson.py       the lesson: the math in its docstring, run(config, ...) -> Result (pure: no printing), the
                    claims, EXPLAIN (what --explain shows); it may have rooms beside it (ddp does)
    exercises/      what students write: __init__.py (the exercises' texts, torch-free), harness.py (how their
                    function is called: the only code of the lesson that runs beside a submission), checks.py (the
                    references, the known mistakes, what each check claims), answers.py (model answers)

A harness.py runs in the sandbox (gradlab/practice/sandbox/box.py), where gradlab binds it and what it imports of
gradlab one file at a time: it imports torch, the standard library and gradlab.kit.harness, nothing else of
gradlab (a worker launcher named in gradlab.practice.sandbox.files.SHARED is the one exception), and it opens sockets
only
in its Harness's prepare, before the submission loads (gradlab/kit/harness.py says why);
tests/test_sandbox.py imports every harness in the real sandbox with only those files.

and one line naming its folder in gradlab/lessons/__init__.py (ORDER, the teaching order).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from gradlab.kit import options


@runtime_checkable
class Lesson(Protocol):
    """What a lesson module provides (checked for every lesson by tests/test_settings.py)."""

    Config: type[options.LessonConfig]  # its settings (from its settings.py)
    # the functions and classes whose source `--explain full` prints next to the math (`--explain`: EXPLAIN_SHORT,
    # default the first); never one that answers an exercise (tests/test_explain.py)
    EXPLAIN: tuple[str, ...]
    run: Callable[..., Any]  # run(config, [data,] device=, progress=) -> Result; pure: no printing


@dataclass(frozen=True, kw_only=True)
class LessonInfo:
    """A lesson's entry in the registry: its name, its settings, and what the command line says about it."""

    name: str  # the subcommand
    config: type[options.LessonConfig]  # its settings: the options of its command
    idea: str  # the TF-1 tutorial idea it reproduces
    short_help: str  # its line in `gradlab --help`
    help: str  # its `--help` text
    needs_data: bool = False  # trains on MNIST-like images: --dataset --data-dir --offline
    dataset_default: str = "auto"
    # option values for `gradlab all --quick` (and `--quick`): small budgets that still hold every claim. dqn keeps
    # its default 30,000 steps: its learning claim failed on 1 of 10 seeds at 20,000 steps (bench/bench_seeds.py
    # --extra)
    quick: dict[str, Any] = field(default_factory=dict)
    full: dict[str, Any] = field(default_factory=dict)  # option values for `gradlab all`
    list_note: str = ""  # said after its main options in `gradlab list`
    # Its facts for the step-through and the grader, declared here so that a new lesson cannot lack them (each says
    # {} or None when it has none):
    # `gradlab step`: what its graphs() takes to make the input it walks small enough that every number fits on the
    # screen, e.g. {"transitions": 1} ({}: its default input is small already)
    step_inputs: dict[str, int]
    # functions of its lesson.py that answer one of its exercises adapted in a few lines under another name:
    # {exercise's function: lesson's function} (`--explain` prints none of them: tests/test_explain.py)
    answered_by: dict[str, str]
    # what every student's installed gradlab holds that passes an exercise's check as it is (every check, the
    # forbidden calls included), by qualified name: {exercise's function: (names, …)}; computed by tests/answered.py,
    # and tests/test_grade.py keeps it equal to what that finds
    passes_check: dict[str, tuple[str, ...]]
    # its graded variant in the repository's teacher kit (teacher/graded/course.toml, never in the wheel): the same
    # skill, an answer no student's gradlab holds, e.g. "mnist_graded.weighted_softmax_grad" (None: none)
    graded_variant: str | None

    @property
    def package(self) -> str:
        """The lesson's folder as a package: gradlab.lessons.<name with _ for ->."""
        return f"gradlab.lessons.{self.name.replace('-', '_')}"

    @functools.cached_property
    def specs(self) -> list[options.Spec]:
        """Every option of its command, in --help order (read once from the Config's fields)."""
        return options.lesson_specs(self.config, self.needs_data, self.dataset_default)

    @property
    def options(self) -> str:
        """Its main options, as `gradlab list` shows them."""
        return options.listed(self.specs) + (f"; {self.list_note}" if self.list_note else "")

    def args(self, values: dict[str, Any]) -> list[str]:
        """The arguments of `gradlab` that run this lesson with option VALUES (e.g. its quick budget):
        ["mnist", "--dataset", "mnist-sample", "--offline", "--epochs", "3"]."""
        return [self.name, *options.as_args(self.specs, values)]

    def command(self, values: dict[str, Any]) -> str:
        """The same as a command line to show: `gradlab mnist --dataset mnist-sample --offline --epochs 3`."""
        import shlex

        return shlex.join(["gradlab", *self.args(values)])

    def load(self) -> Lesson:
        """The lesson module, <package>.lesson (imports torch)."""
        import warnings

        # torch's own modules warn that torch.jit.script is deprecated when torch.func loads: not the user's concern
        warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.* is deprecated", category=FutureWarning)
        module = importlib.import_module(f"{self.package}.lesson")
        assert isinstance(module, Lesson) and module.Config is self.config, f"{self.package} is not a lesson"
        return module
