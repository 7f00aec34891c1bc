"""gradlab: learn how gradients really work, by reproducing classic TensorFlow-1 gradient tutorials in PyTorch.

As a library (notebooks, Colab): `gradlab.lessons()`, `gradlab.run("mnist", epochs=3)`; see gradlab.api. This
import is cheap: torch is imported when a lesson runs.
"""

# The lesson index (torch-free). Loaded first because `gradlab.lessons` names two things: the function below and
# the subpackage gradlab/lessons/. Importing a subpackage binds its name on the package, once, when it first loads:
# loading it here, before the function is defined, leaves gradlab.lessons the function for good. Reach the
# subpackage with `from gradlab.lessons import ...`.
from gradlab.lessons import LESSONS as _LESSONS  # noqa: F401
from gradlab.version import __version__  # noqa: F401


def lessons() -> list[dict[str, str]]:
    """Every lesson in teaching order: {"name", "idea", "options"}."""
    from gradlab.api import lessons as _lessons

    return _lessons()


def run(lesson: str, *, progress: bool = False, **options):
    """Run LESSON with OPTIONS (the command line's options as keyword arguments) and return its Result, which
    Jupyter displays as tables, claims and plots. Bad input raises gradlab.errors.GradlabError."""
    from gradlab.api import run as _run

    return _run(lesson, progress=progress, **options)


def options(lesson: str) -> dict:
    """The keyword arguments run(LESSON, ...) accepts, with their defaults."""
    from gradlab.api import options as _options

    return _options(lesson)


def graph(tensor, *, names: dict | None = None, title: str = "", forbidden: tuple[str, ...] = ()):
    """TENSOR's backward graph, measured (the gradient arriving at every node); Jupyter draws it. NAMES groups the
    leaves: {"online": module, "x": tensor}. Run the forward under `with gradlab.record():` to see values too."""
    from gradlab.api import graph as _graph

    return _graph(tensor, names=names, title=title, forbidden=forbidden)


def record():
    """A context for the forward pass: gradlab.graph then shows each node's values, source line and cuts."""
    from gradlab.api import record as _record

    return _record()


def exercises() -> list[dict]:
    """Every exercise: {"name", "lesson", "function", "level", "what"} (as `gradlab exercises`)."""
    from gradlab.practice import listing

    return listing()


def check(fn, exercise: str):
    """Check FN (a function or class you wrote, e.g. in a notebook cell) against exercise EXERCISE, as `gradlab
    check` does; return the Result, which Jupyter shows as the table of checks with the diagnosis."""
    from gradlab.practice.notebook import check_function

    return check_function(fn, exercise)
