"""The click adapter: a lesson's option fields (gradlab.kit.options) as click options. What a value must be is
declared on the fields; click checks the flags typed, gradlab.runner the values that never pass through click (a
--config preset's, gradlab.run's keyword arguments) with the same Specs.

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
        return click.Choice(s.opt.choices)
    if s.opt.path:
        return click.Path(dir_okay=False) if s.opt.path == "file" else click.Path(file_okay=False)
    if s.opt.range:
        return click.IntRange(*s.opt.range)
    return {"a whole number": click.INT, "a number": click.FLOAT}.get(s.kind, click.STRING)
