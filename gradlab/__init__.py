"""gradlab: learn how gradients really work, by reproducing classic TensorFlow-1 gradient tutorials in PyTorch.

As a library (notebooks, Colab): `gradlab.list_lessons()`, `gradlab.run("mnist", epochs=3)`; see gradlab.api. This
import is cheap: torch is imported when a lesson runs.
"""

from gradlab.api import check, graph, list_exercises, list_lessons, options, record, run  # noqa: F401
from gradlab.version import __version__  # noqa: F401
