"""click options with declared types and ranges, checked while the command line is parsed.

The check is :func:`nmtkit.config.convert`, the same one that checks YAML keys, so a value is refused
with the same words wherever it comes from, before any work starts.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence

import click

from nmtkit.config import DECODING, Allowed, FileValues, Option, Pattern, Range, convert, expect


class Checked(click.ParamType):
    """A number within a :class:`~nmtkit.config.Range`, or a string matching a :class:`~nmtkit.config.Pattern`."""

    def __init__(self, kind: type, allows: Optional[Allowed] = None):
        self.kind, self.allows = kind, allows
        self.name = {int: "integer", float: "float"}.get(kind, "text")

    def get_metavar(self, param: click.Parameter, ctx: Optional[click.Context] = None) -> str:
        if isinstance(self.allows, Pattern) and self.allows.metavar:
            return self.allows.metavar
        suffix = self.allows.short() if isinstance(self.allows, Range) else ""
        return self.name.upper() + suffix

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> Any:
        try:
            return convert(value, self.kind, self.allows)
        except (TypeError, ValueError, OverflowError):
            self.fail(f"expects {expect(self.kind, self.allows)}, got {value!r}", param, ctx)


def setting(name: str) -> Checked:
    """The click type of the option of a numeric decoding setting (:data:`nmtkit.config.DECODING`)."""
    return Checked(*DECODING[name])


def click_type(o: Option) -> click.ParamType:
    """The click type of an option: its choices, or its kind checked against what it allows."""
    return click.Choice(list(o.choices)) if o.choices else Checked(o.kind, o.allows)


def click_options(options: Sequence[Option]) -> list[click.Option]:
    """One ``--key-name`` click option per config key (default None: 'not given'), in order."""
    made = []
    for o in options:
        default = f" [default: {o.default}]" if o.default not in ("", None) else ""
        if o.kind is bool:
            made.append(click.Option([f"{o.flag}/--no-{o.flag[2:]}", o.name], default=None, help=o.help + default))
        else:
            made.append(click.Option([o.flag, o.name], type=click_type(o), default=None, help=o.help + default,
                                     metavar=o.metavar or None))
    return made


def config_options(options: Sequence[Option]) -> Callable:
    """Decorator adding :func:`click_options` to a command."""

    def decorate(f: Callable) -> Callable:
        f.__click_params__ = getattr(f, "__click_params__", []) + click_options(options)[::-1]  # type: ignore
        return f

    return decorate


def named_systems(values: Sequence[str], option: str, several: bool = False) -> dict[str, list[str]]:
    """``NAME=FILE`` values (``NAME=FILE1,FILE2,...`` with ``several``: one file per seed) by name, in order; one line
    naming ``option`` for a value of another form or a name given twice."""
    from nmtkit.errors import NmtkitError

    systems: dict[str, list[str]] = {}
    for value in values:
        name, sep, paths = value.partition("=")
        files = [p for p in paths.split(",") if p] if several else [paths] * bool(paths)
        if not sep or not name or not files:
            form = "NAME=FILE or NAME=FILE1,FILE2,... (one file per seed)" if several else "NAME=FILE"
            raise NmtkitError(f"{option}: expected {form}, not {value!r}", exit_code=2)
        if name in systems:
            raise NmtkitError(f"{option}: two systems have the same name, {name!r}", exit_code=2)
        systems[name] = files
    return systems


def given_options(*names: str) -> list[str]:
    """Which of the current command's parameters ``names`` the command line gave, as errors name them (a switch as
    given: ``--no-feature-norm``), none outside a command."""
    from click.core import ParameterSource

    from nmtkit.cli.paths import option_name

    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return []
    params = {param.name: param for param in ctx.command.params}

    def named(param: click.Parameter) -> str:
        if isinstance(param, click.Option) and param.secondary_opts and ctx.params.get(param.name) is False:
            return max(param.secondary_opts, key=len)
        return option_name(param)

    return [named(params[name]) for name in names if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE]


def check_goes_with(*rules: tuple[str, bool, str]) -> None:
    """Refuse, in one line naming it (exit 2), an option given on the command line that the command would ignore:
    each rule is (the option's parameter name, whether it is used, what it goes with)."""
    from nmtkit.errors import NmtkitError

    for name, used, goes_with in rules:
        for flag in [] if used else given_options(name):
            raise NmtkitError(f"{flag}: goes with {goes_with}", exit_code=2)


def check_file_goes_with(rules: Sequence[tuple[str, bool, str]], file_values: FileValues, config: Mapping,
                         defaults: Mapping, file_name: str) -> None:
    """As :func:`check_goes_with` for the keys of a config file, naming the key's line: a key the run would ignore
    is refused where its value is not its default (a run's own config.yaml, given back, holds every key, at its
    default where unused)."""
    from nmtkit.errors import NmtkitError

    for name, used, goes_with in rules:
        if not used and name in file_values and config[name] != defaults[name]:
            raise NmtkitError(f"{file_values.where(name, file_name)}: '{name}' goes with {goes_with}", exit_code=2)
