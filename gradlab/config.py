"""--config FILE.toml: values from the file, overridden by flags given on the command line."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from gradlab.errors import GradlabError, shorten


def resolve(path: str | Path) -> Path:
    """PATH as given, or, when no such file exists and PATH is a bare name, the preset of that name (`--config
    mnist-quick`: the presets ship with gradlab, so they work from any folder and from an installed wheel)."""
    from gradlab import assets

    p = Path(path)
    name = p.name.removesuffix(".toml")
    if not p.exists() and str(p.parent) == "." and name in assets.presets():
        return assets.presets()[name]
    return p


MAX_TOML_BYTES = 1 << 20  # a preset is a few hundred bytes; a larger "config file" is something else


def read_toml(path: str | Path) -> dict[str, Any]:
    """The TOML file at PATH (or the preset of that name): a regular file of at most 1 MiB, checked before it is
    opened, so a device never ends and a FIFO never blocks."""
    import os
    import stat

    from gradlab import assets

    p = resolve(path)
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


def merge_config(ctx: click.Context, params: dict[str, Any]) -> dict[str, Any]:
    """Overlay the TOML file named by --config on the defaults; flags from the command line win."""
    path = params.get("config")
    if not path:
        return params
    from gradlab.lessons import LESSONS

    in_file = {s.name for s in LESSONS[ctx.command.name].specs if s.opt.in_file}  # not where output goes
    by_key = {p.name: p for p in ctx.command.params if p.name in in_file}
    merged = dict(params)
    for key, value in read_toml(path).items():
        name = key.replace("-", "_")
        if name not in by_key:
            known = ", ".join(sorted(by_key))
            raise GradlabError(f"config file {path}: unknown key {key!r} for `gradlab {ctx.command.name}`; "
                               f"known keys: {known}")
        if ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            continue  # a flag on the command line overrides the file
        param = by_key[name]
        if isinstance(value, dict | list):
            raise GradlabError(f"config file {path}: {key} must be a single value, got {value!r}")
        shown = str(value).lower() if isinstance(value, bool) else repr(value)  # as TOML writes it
        merged[name] = cast_value(ctx, param, value, f"config file {path}", key, shown,
                                  lambda kind, key=key: f"{key} = {example(kind)}")
    return merged


def cast_value(ctx: click.Context, param: click.Parameter, value: Any, where: str, key: str, shown: str,
               example: Any) -> Any:
    """VALUE for PARAM, strictly of the option's kind (click would quietly turn 1.5 into 1 and true into 1), then
    cast and checked by click; otherwise GradlabError naming WHERE and KEY, with EXAMPLE(kind) as the fix. Used for
    --config files and for gradlab.run's keyword arguments."""
    wanted = _toml_kind(param)
    if not _is_kind(value, wanted):
        raise GradlabError(f"{where}: {key} must be {wanted}, got {_short(shown)}; e.g. {example(wanted)}")
    try:
        return param.type_cast_value(ctx, value)
    except click.BadParameter as e:
        raise GradlabError(f"{where}: bad value for {key}: {e.format_message()}") from None
    except OverflowError:  # an integer too large for a float: lr = 10**400
        raise GradlabError(f"{where}: {key} = {_short(shown)} is too large; e.g. {example(wanted)}") from None


def _short(text: str) -> str:
    """A value as shown in a message: a 400-digit number is cut to its first digits."""
    return shorten(text, 40, count=True)


_EXAMPLES = {"a whole number": "10", "a number": "0.01", "true or false": "true", "text": '"…"'}


def example(kind: str, python: bool = False) -> str:
    """A value of KIND as a fix in a message: as TOML writes it, or (PYTHON) as a keyword argument would."""
    return "True" if python and kind == "true or false" else _EXAMPLES[kind]


def _toml_kind(param: click.Parameter) -> str:
    """What a value for PARAM must be, in words: a whole number, a number, true or false, or text (strings,
    choices and paths)."""
    if isinstance(param, click.Option) and param.is_flag and param.is_bool_flag:
        return "true or false"
    if isinstance(param.type, click.types.IntParamType):
        return "a whole number"
    if isinstance(param.type, click.types.FloatParamType):
        return "a number"
    if isinstance(param.type, click.types.BoolParamType):
        return "true or false"
    return "text"


def _is_kind(value: Any, kind: str) -> bool:
    if kind == "text":
        return isinstance(value, str)
    if kind == "true or false":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    return isinstance(value, int) if kind == "a whole number" else isinstance(value, int | float)
