"""Presets: `--config NAME` (a preset that ships with gradlab: configs/NAME.toml) or `--config FILE.toml`, a file of
option values. This module finds and reads one; gradlab.runner.resolve lays its values over the lesson's defaults
and the quick budget, under the options the user gave."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from gradlab.errors import GradlabError

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, before it joined the standard library
    import tomli as tomllib


def find(path: str | Path) -> Path:
    """PATH as given, or, when no such file exists and PATH is a bare name, the preset of that name (`--config
    mnist-quick`: the presets ship with gradlab, so they work from any folder and from an installed wheel)."""
    from gradlab import assets

    p = Path(path)
    name = p.name.removesuffix(".toml")
    if not p.exists() and str(p.parent) == "." and name in assets.presets():
        return assets.presets()[name]
    return p


MAX_TOML_BYTES = 1 << 20  # a preset is a few hundred bytes; a larger "config file" is something else


def read(path: str | Path) -> dict[str, Any]:
    """The TOML file at PATH (or the preset of that name): a regular file of at most 1 MiB, checked before it is
    opened, so a device never ends and a FIFO never blocks."""
    import os
    import stat

    from gradlab import assets

    p = find(path)
    try:
        info = os.stat(p)
        if not stat.S_ISREG(info.st_mode):
            raise GradlabError(f"config file {path} is not a regular file (a folder, device or pipe); give a .toml "
                               f"file or a preset's name")
        if info.st_size > MAX_TOML_BYTES:
            raise GradlabError(f"config file {path} is {info.st_size:,} bytes, more than a config file's "
                               f"{MAX_TOML_BYTES:,}; give a .toml file of option values")
        with open(p, "rb") as f:
            return tomllib.loads(f.read(MAX_TOML_BYTES + 1).decode("utf-8"))
    except FileNotFoundError:
        raise GradlabError(f"config file {path} does not exist; check the path, or name a preset: "
                           f"{', '.join(assets.presets())}") from None
    except OSError as e:
        raise GradlabError(f"cannot read config file {path}: {e.strerror or e}; check the path and its "
                           f"permissions") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise GradlabError(f"config file {path} is not valid TOML ({e}); fix the syntax") from None
    except RecursionError:
        raise GradlabError(f"config file {path} nests tables too deeply; a config file is flat: key = value "
                           f"lines") from None
