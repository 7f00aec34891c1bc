"""The click adapter: a lesson's option fields (gradlab.kit.options) as click options. What a value must be is
declared on the fields and checked in one place, Spec.convert: click parses the text of a flag typed into its kind
(a whole number, a number) and hands it to Spec.convert, as gradlab.runner hands it the values that never pass
through click (a --config preset's, gradlab.run's keyword arguments). click's own types stay for what they show: the
metavar ([auto|cpu|cuda], INTEGER RANGE), the range in --help, shell completion.

Imports click, never torch: `gradlab --help` builds every lesson's options from here.
"""

from __future__ import annotations

import click

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
        return _Choice(s, s.opt.choices)
    if s.opt.path:
        return _Path(s, dir_okay=False) if s.opt.path == "file" else _Path(s, file_okay=False)
    if s.opt.range:
        return _IntRange(s, *s.opt.range)
    return _PARSE[s.kind]


_PARSE = {"a whole number": click.INT, "a number": click.FLOAT, "text": click.STRING}  # text → the option's kind


class _Checked:
    """A click type whose check is the option's Spec.convert (the one a --config value and gradlab.run's keyword
    arguments pass too); the click type it is mixed into only shows the option (metavar, range, completion)."""

    def __init__(self, spec: Spec, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.spec = spec

    def convert(self, value, param, ctx):
        parsed = _PARSE[self.spec.kind].convert(value, param, ctx)
        try:
            return self.spec.convert(parsed)
        except ValueError as e:  # worded as click words its own checks: "Invalid value for '--seed': ..."
            self.fail(str(e), param, ctx)


class _Choice(_Checked, click.Choice):
    pass


class _Path(_Checked, click.Path):
    pass


class _IntRange(_Checked, click.IntRange):
    pass
