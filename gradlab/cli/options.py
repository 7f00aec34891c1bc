"""The click adapter: a lesson's option fields (gradlab.kit.options) as click options, their defaults as the command
line gives them, and the strict check of a value that did not come through click's parser (a --config preset's
values, gradlab.run's keyword arguments). That check reuses click's types, so its messages match the command line's.

Imports click, never torch: `gradlab --help` builds every lesson's options from here.
"""

from __future__ import annotations

import typing
from typing import Any

import click
from click.core import ParameterSource

from gradlab.errors import GradlabError, shorten
from gradlab.kit.options import Spec


def click_params(all_specs: list[Spec]) -> list[click.Option]:
    """The click options of SPECS, in order; a flag group gives one option per flag."""
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
        lone = {"is_flag": False, "flag_value": o.value} if o.value is not None else {}  # --explain [short|full]
        params.append(click.Option(decl, type=_click_type(s), default=s.default, envvar=o.envvar,
                                   show_default=s.default not in (None, ""), help=o.help, **lone))
    return params


def _click_type(s: Spec):
    if s.opt.choices:
        return click.Choice(s.opt.choices)
    if s.opt.path:
        return click.Path(dir_okay=False) if s.opt.path == "file" else click.Path(file_okay=False)
    if s.opt.range:
        return click.IntRange(*s.opt.range)
    base = next((t for t in typing.get_args(s.type) if t is not type(None)), s.type)  # int | None → int
    return {int: click.INT, float: click.FLOAT}.get(base, click.STRING)


def defaults(all_specs: list[Spec]) -> tuple[dict[str, Any], set[str]]:
    """Every option of SPECS as the command line gives it when no flag is typed, and the names an environment
    variable set (GRADLAB_DATA: --data-dir)."""
    ctx = click.Command("gradlab", params=click_params(all_specs)).make_context("gradlab", [])
    return ctx.params, {k for k in ctx.params if ctx.get_parameter_source(k) == ParameterSource.ENVIRONMENT}


def strict_params(all_specs: list[Spec]) -> dict[str, click.Option]:
    """The click option that checks each name's values (a flag group's flags share one name and one kind)."""
    params: dict[str, click.Option] = {}
    for p in click_params(all_specs):
        params.setdefault(p.name, p)
    return params


def strict(param: click.Option, value: Any, where: str, key: str, python: bool = False) -> Any:
    """VALUE for PARAM, strictly of the option's kind (click would quietly turn 1.5 into 1 and true into 1), then
    cast and checked by click; otherwise GradlabError naming WHERE and KEY, with a value of the right kind as the
    fix, written as TOML does (a --config file) or, with PYTHON, as a keyword argument (gradlab.run)."""
    wanted = _kind(param)
    shown = repr(value) if python or not isinstance(value, bool) else str(value).lower()  # as it was written

    def fix() -> str:
        return f"{key}={example(wanted, python=True)}" if python else f"{key} = {example(wanted)}"

    if not _is_kind(value, wanted):
        raise GradlabError(f"{where}: {key} must be {wanted}, got {_short(shown)}; e.g. {fix()}")
    try:
        return param.type_cast_value(click.Context(click.Command("gradlab")), value)
    except click.BadParameter as e:
        raise GradlabError(f"{where}: bad value for {key}: {e.format_message()}") from None
    except OverflowError:  # an integer too large for a float: lr = 10**400
        raise GradlabError(f"{where}: {key} = {_short(shown)} is too large; e.g. {fix()}") from None


def _short(text: str) -> str:
    """A value as shown in a message: a 400-digit number is cut to its first digits."""
    return shorten(text, 40, count=True)


_EXAMPLES = {"a whole number": "10", "a number": "0.01", "true or false": "true", "text": '"…"'}


def example(kind: str, python: bool = False) -> str:
    """A value of KIND as a fix in a message: as TOML writes it, or (PYTHON) as a keyword argument would."""
    return "True" if python and kind == "true or false" else _EXAMPLES[kind]


def _kind(param: click.Parameter) -> str:
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
