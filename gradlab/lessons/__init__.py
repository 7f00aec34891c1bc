"""The lessons, in teaching order: the one registry that names them. Each lesson is a folder of this package (see
gradlab/lessons/info.py for what it holds); ORDER below is the one line that names it. Every other list of lessons
(the commands, `gradlab list`, the exercises, scripts, tests, runtimes) is derived from LESSONS.

It imports nothing heavy (each folder's __init__.py and settings.py are torch-free): `gradlab --help`, `gradlab list`
and every lesson's `--help` read it.
"""

from __future__ import annotations

import importlib

from gradlab.lessons.info import Lesson, LessonInfo  # noqa: F401 — the contract, named where the lessons are

ORDER = (  # the folders, in teaching order: one line each
    "mnist",
    "clip",
    "jacobian",
    "log1pexp",
    "gaussian_policy",
    "dqn",
    "actor_critic",
    "ddp",
)

LESSONS: dict[str, LessonInfo] = {info.name: info for info in
                                  (importlib.import_module(f"gradlab.lessons.{folder}").INFO for folder in ORDER)}


def index() -> list[dict[str, str]]:
    """Every lesson in teaching order: {"name", "idea", "options"} (the rows of `gradlab list`)."""
    return [{"name": i.name, "idea": i.idea, "options": i.options} for i in LESSONS.values()]


def measured_runtimes() -> dict:
    """gradlab/runtimes.json, written by `make runtimes` (bench/runtimes.py): measured, never typed by hand."""
    import json
    from pathlib import Path

    try:
        return json.loads((Path(__file__).resolve().parent.parent / "runtimes.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
