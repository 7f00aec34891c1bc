"""gradlab: learn how gradients really work, by reproducing classic TensorFlow-1 gradient tutorials in PyTorch.

As a library (notebooks, Colab): `gradlab.list_lessons()`, `gradlab.run("mnist", epochs=3)`; see gradlab.api. This
import is cheap: the library's functions load on first use (gradlab.api, then torch when a lesson runs), so the
`gradlab` command starts with nothing of them loaded and can answer a Ctrl-C from its first moment (gradlab.cli).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gradlab.version import __version__

if TYPE_CHECKING:
    from gradlab.api import check, graph, list_exercises, list_lessons, options, record, run

__all__ = ["__version__", "check", "graph", "list_exercises", "list_lessons", "options", "record", "run"]
_API = frozenset(__all__) - {"__version__"}


def __getattr__(name: str) -> Any:
    """gradlab.run and the other library functions, from gradlab.api on first use (PEP 562)."""
    if name in _API:
        from gradlab import api

        return getattr(api, name)
    raise AttributeError(f"module 'gradlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _API)
