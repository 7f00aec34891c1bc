"""What gradlab ships beside its code: the bundled MNIST sample, the TOML presets and the notebooks.

In a checkout (or an editable install) they are data/mnist-sample, configs/ and notebooks/; an installed wheel
carries them as gradlab/_data/mnist-sample, _data/configs and _data/notebooks (pyproject.toml's force-include).
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
CHECKOUT = PACKAGE.parent
IN_CHECKOUT = {"mnist-sample": "data/mnist-sample", "configs": "configs", "notebooks": "notebooks"}


def folder(kind: str) -> Path | None:
    """Where KIND ("mnist-sample", "configs", "notebooks") lives: the wheel's copy first, else the checkout's."""
    for d in (PACKAGE / "_data" / kind, CHECKOUT / IN_CHECKOUT[kind]):
        if d.is_dir():
            return d
    return None


def presets() -> dict[str, Path]:
    """The presets by name: {"mnist-quick": …/mnist-quick.toml, …} (`--config mnist-quick`)."""
    d = folder("configs")
    return {p.stem: p for p in sorted(d.glob("*.toml"))} if d else {}


def notebooks() -> list[Path]:
    """The lesson notebooks, in teaching order (01-mnist.ipynb …)."""
    d = folder("notebooks")
    return sorted(d.glob("*.ipynb")) if d else []
